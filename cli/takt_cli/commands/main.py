"""The root of the `takt` command and its error contract.

Every failure, whether a usage error from click or an error answer from the API, becomes one line
on stderr (`takt: error: ...`) and a non-zero exit status, so scripts can rely on it.

Shell completion is click's: `eval "$(_TAKT_COMPLETE=bash_source takt)"` in ~/.bashrc (or
`zsh_source` in ~/.zshrc, `fish_source` for fish) completes commands, options and, from the API,
job ids.
"""

from __future__ import annotations

import importlib
import sys

import click

from takt_cli.commands.errors import CliError, terminal_text

# Each command: the module that defines it (`module:attribute` when the function is not named
# as the command) and its one-line help. `takt --help` prints these
# without importing any command, so it costs only click's own start-up; a test checks each line
# against the command's own short help, so the two cannot drift apart.
COMMANDS: dict[str, tuple[str, str]] = {
    "jobs": ("takt_cli.commands.jobs", "Create, list, change and run jobs."),
    "executions": ("takt_cli.commands.executions", "Inspect, re-run and cancel executions."),
    "runs": ("takt_cli.commands.runs", "Inspect and re-run workflow runs."),
    "schedule": ("takt_cli.commands.schedule", "Inspect schedules locally, without a takt server."),
    "local": (
        "takt_cli.commands.local",
        "Run the API, scheduler, workers and watchdog locally on moto, keeping the data.",
    ),
    "receive": (
        "takt_cli.commands.receive",
        "Receive takt's calls: print each one, verify its signature, answer --status.",
    ),
    "worker": (
        "takt_cli.commands.worker",
        "Run executions from the lanes until SIGTERM or Ctrl-C.",
    ),
    "deploy": (
        "takt_cli.commands.deploy",
        "Before cdk deploy: what the account's Lambda and DynamoDB limits refuse or throttle.",
    ),
    "cost": ("takt_cli.commands.cost", "Price a synthesized deployment at us-east-1 list prices."),
    "top": ("takt_cli.commands.top", "Live throughput, lag and queue depth (Ctrl-C to quit)."),
    "console": (
        "takt_cli.commands.console",
        "Serve the web console here, calling the API at --endpoint as you (Ctrl-C to stop).",
    ),
    "bench": ("takt_cli.commands.bench", "Benchmark, price and capacity-plan takt."),
    "tenants": (
        "takt_cli.commands.tenants",
        "Per-tenant upkeep: job counters (on the tables), webhook signing keys (the API).",
    ),
    "import": (
        "takt_cli.commands.migrate:import_",
        "Create jobs from Kubernetes CronJobs, EventBridge schedules or a crontab.",
    ),
    "calendars": (
        "takt_cli.commands.calendars",
        "Named calendars: jobs that name one skip (and record) occurrences in its windows.",
    ),
    "quarantine": (
        "takt_cli.commands.quarantine",
        "Records takt could not read or write (admin): list them, clear one once repaired.",
    ),
    "regions": (
        "takt_cli.commands.regions",
        "The region lease of a multi-region deployment: who dispatches, and moving it.",
    ),
    "export": (
        "takt_cli.commands.migrate",
        "Write jobs as EventBridge schedules or Kubernetes CronJobs, where they map back.",
    ),
}


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command runs (or its own help
    or completion is asked for): most commands need boto3 or pydantic, `takt --help` none."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, _, attribute = COMMANDS[cmd_name][0].partition(":")
        command = getattr(importlib.import_module(module), attribute or cmd_name)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
    from takt_cli.commands.context import context_of  # noqa: PLC0415 - `takt --help` loads no command

    ctx.obj = context_of(ctx.params)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status instead of raising SystemExit."""
    try:
        cli.main(args=argv, prog_name="takt", standalone_mode=False)
    except CliError as exc:
        click.echo(f"takt: error: {terminal_text(exc.message)}", err=True)
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
