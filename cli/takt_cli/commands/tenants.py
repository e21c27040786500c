"""`takt tenants`: an operator's upkeep of per-tenant limits and webhook signing keys.

`recount` does not call the API: it reads the same `TAKT_*` environment as
`takt worker` and the functions (the table names, region, endpoint) and uses the caller's AWS
credentials, which need `dynamodb:Query` on the jobs table and `GetItem`/`UpdateItem` on the
tenants table. `webhook-key` calls the API, as the job commands do: the API function holds the
deployment's master signing secret, which the keys are derived from (docs/SECURITY.md).
"""

from __future__ import annotations

from typing import Any

import click
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from takt.api.identity import is_tenant_id
from takt.config import Settings, get_settings
from takt.schedule.durations import parse_duration
from takt.tenants import RecountError
from takt.wiring import build_services
from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext, CliError


@click.group()
def tenants() -> None:
    """Per-tenant upkeep: job counters (on the tables), webhook signing keys (the API)."""


@tenants.command()
@click.argument("tenant")
@click.pass_obj
def recount(ctx: CliContext, tenant: str) -> None:
    """Set TENANT's job counter, which its max_jobs limit goes by, to the jobs it stores.

    The counter misses jobs stored before limits were counted (an older deployment) and can
    drift after a failure; this counts the tenant's jobs in the jobs table and prints the
    counter before and after.
    """
    if not is_tenant_id(tenant):
        raise click.BadParameter(
            f"{tenant!r} is not a tenant id (1-128 characters, no '#' or spaces)",
            param_hint="'TENANT'",
        )
    settings = _settings()
    try:
        result = build_services(settings).limiter.recount(tenant)
    except RecountError as exc:
        raise CliError(str(exc)) from exc
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise CliError(
            f"cannot recount {tenant} in tables {settings.jobs_table} and "
            f"{settings.tenants_table}: {error.get('Code')}: {error.get('Message')}"
        ) from exc
    except BotoCoreError as exc:
        raise CliError(f"cannot recount {tenant}: {exc}") from exc
    row = {"tenant": tenant, "before": result.before, "after": result.after}
    ctx.emit(row, table=[row])


def _settings() -> Settings:
    try:
        return get_settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "TAKT_" + "_".join(str(part) for part in first["loc"]).upper()
        raise CliError(f"{name}: {first['msg']}") from exc


@tenants.group("webhook-key")
def webhook_key() -> None:
    """A tenant's webhook signing keys, through the API (an admin may name any tenant)."""


@webhook_key.command("show")
@click.argument("tenant")
@click.pass_obj
def show_webhook_key(ctx: CliContext, tenant: str) -> None:
    """Print TENANT's signing keys (`whsec_...`), current first; its receivers verify with them.

    In `takt local` the tenant is `local` unless started with --tenant.
    """
    answer, _ = call(ctx, "GET", "/v1/webhook-keys", headers={"Takt-Tenant": tenant})
    _emit_keys(ctx, answer)


@webhook_key.command("rotate")
@click.argument("tenant")
@click.option(
    "--overlap",
    default="24h",
    show_default=True,
    help="How long the replaced key still signs beside the new one (e.g. 30m, 24h, 7d; 0 "
    "stops it at once, for a key that leaked).",
)
@click.pass_obj
def rotate_webhook_key(ctx: CliContext, tenant: str, overlap: str) -> None:
    """Give TENANT a new signing key; the old one keeps signing for --overlap."""
    try:
        seconds = 0.0 if overlap.strip() == "0" else parse_duration(overlap).total_seconds()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--overlap'") from None
    answer, _ = call(
        ctx,
        "POST",
        "/v1/webhook-keys/rotate",
        body={"overlap_sec": int(seconds)},
        headers={"Takt-Tenant": tenant},
    )
    _emit_keys(ctx, answer)


def _emit_keys(ctx: CliContext, answer: dict[str, Any]) -> None:
    rows = [
        {
            "tenant": answer["tenant"],
            "generation": key["generation"],
            "secret": key["secret"],
            "valid_until": key["valid_until"] or "current",
        }
        for key in answer["keys"]
    ]
    ctx.emit(answer, table=rows)
