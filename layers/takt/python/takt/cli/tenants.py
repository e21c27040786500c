"""`takt tenants`: an operator's upkeep of per-tenant limits, done on the tables themselves.

Unlike the job commands it does not call the API: it reads the same `TAKT_*` environment as
`takt worker` and the functions (the table names, region, endpoint) and uses the caller's AWS
credentials, which need `dynamodb:Query` on the jobs table and `GetItem`/`UpdateItem` on the
tenants table.
"""

from __future__ import annotations

import click
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from takt.api.identity import is_tenant_id
from takt.cli.context import CliContext, CliError
from takt.config import Settings, get_settings
from takt.tenants import RecountError
from takt.wiring import build_services


@click.group()
def tenants() -> None:
    """Per-tenant upkeep on the tables (AWS credentials, not the API)."""


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
