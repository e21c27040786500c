"""takt's CDK app: a stateful stack (tables, lanes, alarm topic) and a stateless one (the layer,
the functions, the HTTP API, the schedules, the dashboard and alarms).

It is a package so that `python -m infra.app`, the tests and mypy all import its modules under
one name (`infra.*`).
"""
