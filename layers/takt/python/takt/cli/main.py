"""The root of the `takt` command and its error contract.

Every failure, whether a usage error from click or an error answer from the API, becomes one line
on stderr (`takt: error: ...`) and a non-zero exit status, so scripts can rely on it.
"""

from __future__ import annotations

import sys

import click

from takt.cli.context import CliContext, CliError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--endpoint",
    envvar="TAKT_ENDPOINT",
    default="http://127.0.0.1:8080",
    show_default=True,
    help="Base URL of the takt API (env TAKT_ENDPOINT).",
)
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.pass_context
def cli(ctx: click.Context, endpoint: str, output: str) -> None:
    """takt: a distributed job scheduler for AWS."""
    ctx.obj = CliContext(endpoint=endpoint.rstrip("/"), output=output)


def _register() -> None:
    from takt.cli.executions import executions
    from takt.cli.jobs import jobs
    from takt.cli.local import local
    from takt.cli.schedule import schedule

    for command in (jobs, executions, schedule, local):
        cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status instead of raising SystemExit."""
    try:
        cli.main(args=argv, prog_name="takt", standalone_mode=False)
    except CliError as exc:
        click.echo(f"takt: error: {exc.message}", err=True)
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("takt: error: aborted", err=True)
        return 130
    except click.ClickException as exc:
        click.echo(f"takt: error: {exc.format_message()}", err=True)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
