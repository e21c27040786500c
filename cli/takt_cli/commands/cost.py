"""`takt cost idle`: what a synthesized deployment costs a month with no jobs.

Run from the repository after `make synth`: the estimate reads the templates in cdk.out and the
CDK app's driver constants (`infra/`). Everything is imported inside the command, so `takt --help`
stays cheap.
"""

from __future__ import annotations

from pathlib import Path

import click

from takt_cli.commands.errors import CliError


@click.group()
def cost() -> None:
    """Price a synthesized deployment at us-east-1 list prices."""


@cost.command()
@click.argument(
    "cdk_out",
    default="cdk.out",
    type=click.Path(path_type=Path),
    metavar="[CDK_OUT]",
)
def idle(cdk_out: Path) -> None:
    """Print the idle cost tables of the templates in CDK_OUT (default cdk.out), as docs/DEPLOY.md
    shows them."""
    from takt_cli.capacity.regions import report  # noqa: PLC0415 - only this command loads the CDK app's constants and the wiring

    try:
        text = report(cdk_out)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    click.echo(text)
