"""Where the egress allow list comes from: a deployed stack's Settings refuse every non-public
address, `takt local` allows loopback and private networks and says so, and its workers get the
same list."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from takt.config import Settings
from takt.targets.egress import EgressPolicy, EgressRefusedError
from takt_cli.commands.local import local
from takt_cli.local.runtime import LOCAL_EGRESS_ALLOW, describe_egress, worker_env


def test_the_default_settings_refuse_loopback_and_the_metadata_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TAKT_EGRESS_ALLOW", raising=False)
    policy = EgressPolicy(Settings().egress_allow)

    assert Settings().egress_allow == ()
    assert policy.literal_refusal("127.0.0.1") == "127.0.0.1 is loopback"
    assert policy.literal_refusal("169.254.169.254") == "169.254.169.254 is link-local"


def test_the_allow_list_is_read_from_the_environment_as_json(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAKT_EGRESS_ALLOW", '["10.0.0.0/8", "*.svc.internal"]')

    assert Settings().egress_allow == ("10.0.0.0/8", "*.svc.internal")


def test_a_bad_allow_entry_is_a_settings_error() -> None:
    with pytest.raises(ValidationError, match="egress allow entry"):
        Settings(egress_allow=("10.0.0.0/40",))


def test_local_mode_allows_loopback_and_private_networks_but_not_link_local() -> None:
    policy = EgressPolicy(LOCAL_EGRESS_ALLOW)

    for allowed in ("127.0.0.1", "::1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "fd12::1"):
        assert policy.literal_refusal(allowed) is None
    assert policy.literal_refusal("169.254.169.254") == "169.254.169.254 is link-local"


@pytest.mark.parametrize(
    "address",
    ["fd00:ec2::254", "fd00:ec2::23", "[fd00:ec2::254]", "fd00:ec2:0:0:0:0:0:254"],
)
def test_local_mode_refuses_the_ipv6_metadata_service_its_private_range_holds(address: str) -> None:
    policy = EgressPolicy(LOCAL_EGRESS_ALLOW, lambda host, port: [address.strip("[]")])

    refusal = policy.literal_refusal(address)

    assert refusal is not None, (
        f"no allow list opens a credential endpoint: local mode's fc00::/7 let {address} through"
    )
    assert "credential endpoint" in refusal
    with pytest.raises(EgressRefusedError, match="credential endpoint"):
        policy.vet("metadata.test", 80)


def test_the_start_line_says_what_egress_allows() -> None:
    assert describe_egress(Settings(egress_allow=LOCAL_EGRESS_ALLOW)) == (
        "egress: loopback and private addresses allowed (local mode); "
        "--strict-egress to refuse them"
    )
    assert describe_egress(Settings(egress_allow=())) == (
        "egress: loopback and private addresses refused, as in a deployed stack"
    )
    assert describe_egress(Settings(egress_allow=("10.0.0.0/8",))) == (
        "egress: allowed besides public addresses: 10.0.0.0/8"
    )


def test_workers_started_for_a_local_runtime_get_its_allow_list() -> None:
    env = worker_env(Settings(egress_allow=LOCAL_EGRESS_ALLOW))

    assert tuple(json.loads(env["TAKT_EGRESS_ALLOW"])) == LOCAL_EGRESS_ALLOW


def test_takt_local_offers_strict_egress() -> None:
    result = CliRunner().invoke(local, ["--help"])

    assert result.exit_code == 0
    assert "--strict-egress" in result.output
