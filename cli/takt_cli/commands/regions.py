"""`takt regions status|promote REGION`: the region lease, read and moved by an operator.

It reads and writes the lease item through `RegionLeaseStore`, as the regions' own fences do,
against a deployed `regions` table (AWS credentials and region as boto3 finds them) or the
witness of a `takt local --regions` run (`--lease-endpoint`, which that run prints). A promote is
one conditional write at the next epoch: the old holder's next renewal fails and it stops at
once; the new holder acts once its fence has seen itself promoted for the lease and the margin
(docs/ARCHITECTURE.md, "Regions").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import boto3
import click
from botocore.exceptions import BotoCoreError, ClientError

from takt.config import Settings
from takt.models.regions import RegionLease
from takt.store.errors import NotFoundError
from takt.store.region_lease import RegionLeaseStore
from takt_cli.commands.context import CliContext, CliError

T = TypeVar("T")
# What moto takes as credentials: the witness checks none.
MOTO_KEY = "testing"


def _regions_option(function: Any) -> Any:
    return click.option(
        "--regions",
        "regions",
        envvar="TAKT_REGIONS",
        default="",
        help="The deployment's regions, a comma list (env TAKT_REGIONS); a promote must name one.",
    )(function)


def _lease_options(function: Any) -> Any:
    function = click.option(
        "--lease-endpoint",
        envvar="TAKT_REGION_LEASE_ENDPOINT_URL",
        default=None,
        help="The witness moto of a `takt local --regions` run (it prints it; env "
        "TAKT_REGION_LEASE_ENDPOINT_URL). Without it: the deployed table, in --aws-region.",
    )(function)
    function = click.option(
        "--table",
        envvar="TAKT_REGION_LEASE_TABLE",
        default=str(Settings.model_fields["region_lease_table"].default),
        show_default=True,
        help="The regions lease table's name (env TAKT_REGION_LEASE_TABLE).",
    )(function)
    return click.option(
        "--aws-region",
        envvar="AWS_REGION",
        default=None,
        help="The AWS region to read the table in (env AWS_REGION; any of its replicas answers "
        "the same: it is strongly consistent across regions).",
    )(function)


@click.group()
def regions() -> None:
    """The region lease of a multi-region deployment: who dispatches, and moving it."""


@regions.command()
@_lease_options
@_regions_option
@click.pass_obj
def status(
    ctx: CliContext, lease_endpoint: str | None, table: str, aws_region: str | None, regions: str
) -> None:
    """Print the lease: its holder, epoch, renewals and length, and every region's role."""
    lease = _call(_read, lease_endpoint, table, aws_region)
    if lease is None:
        raise CliError(f"no region lease in {table} yet: the first region's driver writes it")
    names = _names(regions) or (lease.holder,)
    rows = [
        {
            "region": name,
            "role": "holder" if name == lease.holder else "standby",
            "epoch": lease.epoch,
            "renewals": lease.renewals if name == lease.holder else None,
            "lease_sec": lease.ttl_ms / 1000,
        }
        for name in names
    ]
    ctx.emit(_as_dict(lease), table=rows)


@regions.command()
@click.argument("region")
@_lease_options
@_regions_option
@click.pass_obj
def promote(
    ctx: CliContext,
    region: str,
    lease_endpoint: str | None,
    table: str,
    aws_region: str | None,
    regions: str,
) -> None:
    """Give the lease to REGION at the next epoch, whoever holds it (failover or failback)."""
    names = _names(regions)
    if not names:
        raise CliError("name the deployment's regions with --regions or TAKT_REGIONS")
    if region not in names:
        raise CliError(f"{region} is not one of the regions {','.join(names)}")
    lease = _call(_promote(region), lease_endpoint, table, aws_region)
    row = _as_dict(lease)
    ctx.emit(row, table=[row])


def _promote(region: str) -> Callable[[Any, str], RegionLease]:
    """The promote, writing the lease length the lease already has (the fences' setting)."""

    def promote(client: Any, table: str) -> RegionLease:
        current = RegionLeaseStore(client, table, lease_ms=0).read()
        if current is None:
            raise NotFoundError(f"no region lease in {table} yet: nothing to promote")
        return RegionLeaseStore(client, table, lease_ms=current.ttl_ms).promote(region)

    return promote


def _read(client: Any, table: str) -> RegionLease | None:
    # A read writes nothing: the lease length is not used.
    return RegionLeaseStore(client, table, lease_ms=0).read()


def _names(regions: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in regions.split(",") if name.strip())


def _as_dict(lease: RegionLease) -> dict[str, Any]:
    return {
        "holder": lease.holder,
        "epoch": lease.epoch,
        "renewals": lease.renewals,
        "lease_sec": lease.ttl_ms / 1000,
    }


def _call(
    action: Callable[[Any, str], T], lease_endpoint: str | None, table: str, aws_region: str | None
) -> T:
    """Run `action` with a DynamoDB client and the table; every failure is one line."""
    try:
        if lease_endpoint:
            session = boto3.session.Session(
                region_name=aws_region or "us-east-1",
                aws_access_key_id=MOTO_KEY,
                aws_secret_access_key=MOTO_KEY,
            )
        else:
            session = boto3.session.Session(region_name=aws_region)
        return action(session.client("dynamodb", endpoint_url=lease_endpoint), table)
    except NotFoundError as exc:
        raise CliError(str(exc)) from None
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise CliError(f"{table}: {error.get('Code')}: {error.get('Message')}") from None
    except BotoCoreError as exc:
        raise CliError(f"cannot reach the regions lease table {table}: {exc}") from None
