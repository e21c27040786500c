"""`takt regions status|promote` on a lease table in moto, as against a `takt local --regions`
witness: the lease is read back raw with boto3, not through the command."""

from __future__ import annotations

import uuid

import pytest

from takt.aws import AwsClients
from takt.resources import REGIONS
from takt.store.region_lease import RegionLeaseStore
from takt_cli.commands.main import main

REGION_LIST = "us-east-1,us-east-2"


@pytest.fixture
def table(clients: AwsClients) -> str:
    name = f"regions-{uuid.uuid4().hex[:8]}"
    clients.dynamodb.create_table(**REGIONS.create_table_kwargs(name))
    return name


def _lease(clients: AwsClients, table: str) -> dict[str, str] | None:
    item = clients.dynamodb.get_item(
        TableName=table, Key={"pk": {"S": "lease"}}, ConsistentRead=True
    ).get("Item")
    if item is None:
        return None
    return {name: str(next(iter(value.values()))) for name, value in item.items()}


def _run(
    capsys: pytest.CaptureFixture[str], moto_endpoint: str, table: str, *args: str
) -> tuple[int, str, str]:
    code = main(
        [
            "-o",
            "json",
            "regions",
            *args,
            "--lease-endpoint",
            moto_endpoint,
            "--table",
            table,
            "--regions",
            REGION_LIST,
        ]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_status_prints_the_holder_epoch_and_renewals_of_the_lease(
    capsys: pytest.CaptureFixture[str], clients: AwsClients, moto_endpoint: str, table: str
) -> None:
    RegionLeaseStore(clients.dynamodb, table, lease_ms=6000).create("us-east-1")

    code, out, err = _run(capsys, moto_endpoint, table, "status")

    assert (code, err) == (0, ""), err
    assert '"holder": "us-east-1"' in out and '"epoch": 1' in out and '"lease_sec": 6.0' in out, (
        f"regions status prints the lease as stored: {out}"
    )


def test_promote_moves_the_lease_to_the_region_at_the_next_epoch(
    capsys: pytest.CaptureFixture[str], clients: AwsClients, moto_endpoint: str, table: str
) -> None:
    RegionLeaseStore(clients.dynamodb, table, lease_ms=6000).create("us-east-1")

    code, _, err = _run(capsys, moto_endpoint, table, "promote", "us-east-2")

    assert (code, err) == (0, ""), err
    lease = _lease(clients, table)
    assert lease is not None
    assert (lease["holder"], lease["epoch"], lease["renewals"], lease["ttl_ms"]) == (
        "us-east-2",
        "2",
        "0",
        "6000",
    ), f"a promote is the named region at the next epoch, the lease length kept: {lease}"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("promote", "eu-west-1"), "eu-west-1 is not one of the regions us-east-1,us-east-2"),
        (("promote", ""), " is not one of the regions"),
    ],
)
def test_a_promote_to_a_region_not_in_the_deployment_is_one_line_and_changes_nothing(
    capsys: pytest.CaptureFixture[str],
    clients: AwsClients,
    moto_endpoint: str,
    table: str,
    args: tuple[str, ...],
    says: str,
) -> None:
    RegionLeaseStore(clients.dynamodb, table, lease_ms=6000).create("us-east-1")
    before = _lease(clients, table)

    code, out, err = _run(capsys, moto_endpoint, table, *args)

    assert (code, out) == (1, ""), "bad input exits 1 and prints nothing on stdout"
    assert len(err.splitlines()) == 1 and says in err, f"bad input is one error line: {err!r}"
    assert _lease(clients, table) == before, "bad input changes nothing stored"


@pytest.mark.parametrize("command", [("status",), ("promote", "us-east-2")])
def test_before_any_lease_status_and_promote_say_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
    clients: AwsClients,
    moto_endpoint: str,
    table: str,
    command: tuple[str, ...],
) -> None:
    code, out, err = _run(capsys, moto_endpoint, table, *command)

    assert (code, out) == (1, ""), "no lease yet is an error, exit 1"
    assert err.startswith("takt: error: no region lease in") and len(err.splitlines()) == 1, err
    assert _lease(clients, table) is None, "a promote before the first lease writes nothing"


def test_a_missing_table_is_one_error_line(
    capsys: pytest.CaptureFixture[str], moto_endpoint: str
) -> None:
    code, out, err = _run(capsys, moto_endpoint, "no-such-table", "status")

    assert (code, out) == (1, "")
    assert "ResourceNotFoundException" in err and len(err.splitlines()) == 1, err
