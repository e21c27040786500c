"""`python -m infra.cost [cdk.out]`: the idle cost of the synthesized deployment, as DESIGN.md and
docs/DEPLOY.md name it, and with `regions` what each further region adds. The tool itself is the
tooling's (`takt_cli.capacity.idle` and `takt_cli.capacity.regions`, also `takt cost idle`);
this entry point is the CDK app's only door to the tooling, and nothing the app synthesizes from
imports it (the `cdk-app-no-tooling` import contract).
"""

from __future__ import annotations

import sys

from takt_cli.capacity.regions import main

if __name__ == "__main__":
    main(sys.argv)
