"""The root of the `takt` command and its error contract.

Every failure, whether a usage error from click or an error answer from the API, becomes one line
on stderr (`takt: error: ...`) and a non-zero exit status, so scripts can rely on it.

Shell completion is click's: `eval "$(_TAKT_COMPLETE=bash_source takt)"` in ~/.bashrc (or
`zsh_source` in ~/.zshrc, `fish_source` for fish) completes commands, options and, from the API,
job ids.
"""

from __future__ import annotations

import sys

import click

from takt.cli.context import CliError, context_of


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
@click.option(
    "--sigv4/--no-sigv4",
    default=None,
    help="Sign requests with SigV4 (an API deployed with IAM auth). [default: sign unless the "
    "endpoint is on this machine]",
)
@click.option("--profile", envvar="AWS_PROFILE", help="AWS profile to sign with (env AWS_PROFILE).")
@click.option("--region", help="Region to sign for. [default: the endpoint's, else the profile's]")
@click.option(
    "--token",
    envvar="TAKT_TOKEN",
    help="Bearer token, for an API deployed with a JWT authorizer (env TAKT_TOKEN).",
)
@click.pass_context
def cli(
    ctx: click.Context,
    endpoint: str,
    output: str,
    sigv4: bool | None,
    profile: str | None,
    region: str | None,
    token: str | None,
) -> None:
    """takt: a distributed job scheduler for AWS."""
    ctx.obj = context_of(ctx.params)


def _register() -> None:
    from takt.cli.bench import bench
    from takt.cli.calendars import calendars
    from takt.cli.console import console
    from takt.cli.executions import executions
    from takt.cli.jobs import jobs
    from takt.cli.local import local
    from takt.cli.migrate import export, import_
    from takt.cli.runs import runs
    from takt.cli.schedule import schedule
    from takt.cli.tenants import tenants
    from takt.cli.top import top
    from takt.cli.worker import worker

    commands = (
        jobs,
        executions,
        runs,
        schedule,
        local,
        worker,
        top,
        console,
        bench,
        tenants,
        import_,
        export,
        calendars,
    )
    for command in commands:
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
