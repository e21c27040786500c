"""takt's CDK app: a stateful stack (tables, lanes, alarm topic) and a stateless one (the layer,
the functions, the HTTP API, the schedules, the dashboard and alarms).

It is a package so that `python -m infra.app`, the tests and mypy all import its modules under
one name (`infra.*`).
"""

import os

# jsii writes Node 20's end-of-life banner through Python as raw b'...' lines on every synth that
# `npx cdk synth` runs; README and DEPLOY ask for Node 22+ and say that 20 works. jsii silences
# it only for the major versions its variable lists (a bare "1" silences nothing). Set before any
# module of the app imports aws_cdk, which starts Node.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")
