"""`takt import ...` and `takt export ...`: moving schedules in from Kubernetes, EventBridge
Scheduler and crontabs, and out to the first two.

The mapping lives in `takt_cli.migrate` and is imported inside each command, so `takt --help` does
not pay for YAML and the API models.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from takt_cli.commands.client import call, send
from takt_cli.commands.context import CliContext, CliError
from takt_cli.commands.errors import terminal_text

if TYPE_CHECKING:
    from takt_cli.migrate import Exported, Imported

REPORT_COLUMNS = ["source", "result", "job_id", "name", "reason"]
PAGE = 200


def _read(path: str) -> str:
    """The source file's text, read no further than one byte past the bound on its size."""
    from takt_cli.migrate import MappingError  # noqa: PLC0415 - only an import command loads its mapping
    from takt_cli.migrate.reading import MAX_SOURCE_BYTES, check_size  # noqa: PLC0415 - only an import command loads its mapping

    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
        else:
            with Path(path).open("rb") as source:
                data = source.read(MAX_SOURCE_BYTES + 1)
        check_size(data, path)
        return data.decode("utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CliError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except MappingError as exc:
        raise CliError(str(exc)) from None


@click.group("import")
def import_() -> None:
    """Create jobs from Kubernetes CronJobs, EventBridge schedules or a crontab.

    Each source item becomes one job; importing the same file again changes nothing (each job's
    idempotency key comes from its source). With --dry-run nothing is created: `-o json` prints
    the job bodies as a JSON array.
    """


_dry_run = click.option(
    "--dry-run", is_flag=True, help="Print the job bodies instead of creating the jobs."
)
_target = click.option(
    "--target",
    required=True,
    help="What each job calls; the container (or command) becomes its payload.",
)


@import_.command("k8s")
@click.argument("file")
@click.option(
    "--target",
    default=None,
    help="What each job calls, the pod's container becoming its payload; without it the "
    "container runs as the job's container target (ECS on Fargate).",
)
@_dry_run
@click.pass_obj
def import_k8s(ctx: CliContext, file: str, target: str | None, dry_run: bool) -> None:
    """CronJob manifests (YAML, several documents or a List); each pod's container becomes a
    container target unless --target is given."""
    from takt_cli.migrate import MappingError, k8s  # noqa: PLC0415 - only this command loads its mapping and YAML

    try:
        items = k8s.load(_read(file), target)
    except MappingError as exc:
        raise CliError(f"{file}: {exc}") from None
    _import(ctx, items, dry_run)


@import_.command("eventbridge")
@click.argument("file")
@_dry_run
@click.pass_obj
def import_eventbridge(ctx: CliContext, file: str, dry_run: bool) -> None:
    """`aws scheduler get-schedule` output, or {"Schedules": [...]} of them (JSON)."""
    from takt_cli.migrate import MappingError, eventbridge  # noqa: PLC0415 - only this command loads its mapping and YAML

    try:
        items = eventbridge.load(_read(file), datetime.now(UTC))
    except MappingError as exc:
        raise CliError(f"{file}: {exc}") from None
    _import(ctx, items, dry_run)


@import_.command("crontab")
@click.argument("file")
@_target
@click.option(
    "--system",
    is_flag=True,
    help="A system crontab (/etc/crontab, /etc/cron.d): a user field follows the schedule.",
)
@_dry_run
@click.pass_obj
def import_crontab(ctx: CliContext, file: str, target: str, system: bool, dry_run: bool) -> None:
    """A crontab: CRON_TZ/TZ lines, comments, @daily-style macros."""
    from takt_cli.migrate import crontab  # noqa: PLC0415 - only this command loads its mapping and YAML

    _import(ctx, crontab.load(_read(file), target, system=system), dry_run)


def _import(ctx: CliContext, items: list[Imported], dry_run: bool) -> None:
    """Print (dry run) or create the items, then report; exit 1 if any was refused, dry run or
    not, so that a dry run answers as the import would."""
    for item in items:
        for note in item.notes:
            click.echo(f"takt: note: {terminal_text(f'{item.source}: {note}')}", err=True)
    if dry_run:
        for item in items:
            if item.reason is not None:
                shown = terminal_text(f"{item.source}: {item.reason}")
                click.echo(f"takt: refused: {shown}", err=True)
        bodies = [item.body for item in items if item.body is not None]
        rows = [
            {
                "source": i.source,
                "result": "would create" if i.body else "refused",
                "name": i.name,
                "reason": i.reason,
            }
            for i in items
        ]
        ctx.emit(bodies, rows, ["source", "result", "name", "reason"])
        _refused(rows)
        return
    imported = {
        job["idempotency_key"]: job
        for job in _jobs(ctx, ())
        if str(job.get("idempotency_key") or "").startswith("import:")
    }
    report = [_create(ctx, item, imported.get(item.key)) for item in items]
    ctx.emit(report, report, REPORT_COLUMNS)
    _refused(report)


def _refused(rows: list[dict[str, Any]]) -> None:
    """Exit 1, after the report, when the source had items takt refuses."""
    refused = sum(row["result"] == "refused" for row in rows)
    if refused:
        raise CliError(f"{refused} of {len(rows)} refused")


def _create(ctx: CliContext, item: Imported, earlier: dict[str, Any] | None) -> dict[str, Any]:
    """Create the item's job, or report the job an earlier import of it made.

    The earlier job is found by its idempotency key among the tenant's jobs, so a re-import
    changes nothing however long after the first (the API's idempotency records expire); it is
    `unchanged` when it is still what the source says, else refused with the fields that differ.
    """
    row: dict[str, Any] = {
        "source": item.source,
        "result": "refused",
        "job_id": None,
        "name": item.name,
        "reason": item.reason,
        "notes": item.notes,
    }
    if item.body is None:
        return row
    if earlier is not None:
        from takt_cli.migrate.model import differences  # noqa: PLC0415 - only this command loads its mapping and YAML

        changed = differences(earlier, item.body)
        row.update(job_id=earlier["id"], name=earlier.get("name"))
        if not changed:
            row["result"] = "unchanged"
            return row
        row["reason"] = (
            f"imported before as {earlier['id']}, which differs from the source in "
            f"{', '.join(changed)}: change that job instead"
        )
        return row
    try:
        status, job, _ = send(
            ctx, "POST", "/v1/jobs", item.body, headers={"Idempotency-Key": item.key}
        )
    except CliError as exc:
        reason = exc.message
        if reason.startswith("422"):
            reason = "imported before with a different definition: change that job instead"
        row["reason"] = reason
        return row
    row.update(result="created" if status == 201 else "unchanged", job_id=job["id"])
    return row


@click.group("export")
def export() -> None:
    """Write jobs as EventBridge schedules or Kubernetes CronJobs, where they map back."""


_jobs_option = click.option(
    "--job", "job_ids", multiple=True, help="Only this job (repeatable); default: every job."
)


@export.command("eventbridge")
@_jobs_option
@click.option("--role-arn", help="The role EventBridge Scheduler assumes to call each target.")
@click.pass_obj
def export_eventbridge(ctx: CliContext, job_ids: tuple[str, ...], role_arn: str | None) -> None:
    """{"Schedules": [...]}, each the input of `aws scheduler create-schedule`."""
    from takt_cli.migrate import eventbridge  # noqa: PLC0415 - only this command loads its mapping and YAML

    out = [eventbridge.export(job, role_arn) for job in _jobs(ctx, job_ids)]
    click.echo(json.dumps({"Schedules": _mapped(out)}, indent=2))


@export.command("k8s")
@_jobs_option
@click.pass_obj
def export_k8s(ctx: CliContext, job_ids: tuple[str, ...]) -> None:
    """CronJob manifests (YAML documents; `-o json`: a JSON array) for container payloads."""
    import yaml  # noqa: PLC0415 - only this command loads its mapping and YAML

    from takt_cli.migrate import k8s  # noqa: PLC0415 - only this command loads its mapping and YAML

    manifests = _mapped([k8s.export(job) for job in _jobs(ctx, job_ids)])
    if ctx.output == "json":
        click.echo(json.dumps(manifests, indent=2))
    else:
        click.echo(yaml.safe_dump_all(manifests, sort_keys=False), nl=False)


def _mapped(out: list[Exported]) -> list[dict[str, Any]]:
    for exported in out:
        if exported.reason is not None:
            shown = terminal_text(f"{exported.job_id}: {exported.reason}")
            click.echo(f"takt: not exported: {shown}", err=True)
        for note in exported.notes:
            click.echo(f"takt: note: {terminal_text(f'{exported.job_id}: {note}')}", err=True)
    return [exported.item for exported in out if exported.item is not None]


def _jobs(ctx: CliContext, job_ids: tuple[str, ...]) -> list[dict[str, Any]]:
    if job_ids:
        return [call(ctx, "GET", f"/v1/jobs/{job_id}")[0] for job_id in job_ids]
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page, _ = call(ctx, "GET", "/v1/jobs", query={"limit": PAGE, "cursor": cursor})
        found.extend(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return found
