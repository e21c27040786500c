"""The egress policy: which addresses HTTP targets may reach, resolution through an injected
resolver, the allow list, and what the API can refuse before anything is resolved."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest

from takt.models.egress import AllowList
from takt.targets.egress import (
    MAX_ADDRESSES,
    EgressPolicy,
    EgressRefusedError,
    EgressResolveError,
    forbidden_reason,
    parse_address,
)


def resolver(table: dict[str, Sequence[str]]) -> tuple[EgressPolicy, list[str]]:
    """A strict policy whose resolver answers from `table`, and the names it was asked."""
    asked: list[str] = []

    def resolve(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        if host not in table:
            raise OSError("Name or service not known")
        return table[host]

    return EgressPolicy(resolver=resolve), asked


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("10.0.0.5", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("169.254.170.2", "link-local"),
        ("100.64.0.1", "shared (CGNAT)"),
        ("100.127.255.255", "shared (CGNAT)"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("255.255.255.255", "reserved"),
        ("240.0.0.1", "reserved"),
        ("192.0.0.8", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.51.100.7", "documentation"),
        ("203.0.113.9", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("fd00:ec2::254", "private"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("2001:db8::1", "documentation"),
        ("3fff::1", "documentation"),
        ("100::1", "reserved"),
        ("2001::1", "reserved"),
        ("64:ff9b:1::1", "reserved"),
        ("fec0::1", "reserved"),
        ("::1.2.3.4", "reserved"),
        ("4000::1", "reserved"),
    ],
)
def test_a_non_public_address_is_refused_with_its_reason(address: str, reason: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("::ffff:127.0.0.1", "loopback (it carries 127.0.0.1)"),
        ("::ffff:169.254.169.254", "link-local (it carries 169.254.169.254)"),
        ("::ffff:a00:5", "private (it carries 10.0.0.5)"),
        ("2002:a00:5::1", "private (it carries 10.0.0.5)"),
        ("2002:7f00:1::", "loopback (it carries 127.0.0.1)"),
        ("64:ff9b::a9fe:a9fe", "link-local (it carries 169.254.169.254)"),
        ("64:ff9b::10.0.0.5", "private (it carries 10.0.0.5)"),
    ],
)
def test_ipv6_forms_of_an_ipv4_address_are_judged_by_that_address(
    address: str, reason: str
) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "address",
    [
        "93.184.215.14",
        "8.8.8.8",
        "1.1.1.1",
        "100.128.0.1",
        "172.32.0.1",
        "2606:4700:4700::1111",
        "2a00:1450:4001:80b::200e",
        "::ffff:8.8.8.8",
        "64:ff9b::8.8.8.8",
    ],
)
def test_a_public_address_is_allowed(address: str) -> None:
    assert forbidden_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("2852039166", "169.254.169.254"),
        ("0x7f.1", "127.0.0.1"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("[::1]", "::1"),
        ("10.0.0.5", "10.0.0.5"),
    ],
)
def test_every_literal_form_getaddrinfo_accepts_is_read_as_its_address(
    host: str, address: str
) -> None:
    assert parse_address(host) == ipaddress.ip_address(address)


@pytest.mark.parametrize("host", ["example.com", "evil.test", "1.2.3.example", "localhost"])
def test_a_name_is_not_read_as_an_address(host: str) -> None:
    assert parse_address(host) is None


def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    policy, asked = resolver({"evil.test": ["10.0.0.5"]})

    with pytest.raises(EgressRefusedError, match=r"evil\.test resolves to 10\.0\.0\.5, which is"):
        policy.vet("evil.test", 443)
    assert asked == ["evil.test"]


def test_a_name_with_one_private_address_among_public_ones_is_refused() -> None:
    policy, _ = resolver({"mixed.test": ["93.184.215.14", "169.254.169.254"]})

    with pytest.raises(EgressRefusedError, match="link-local"):
        policy.vet("mixed.test", 80)


def test_a_public_name_gives_its_vetted_addresses_in_the_resolvers_order() -> None:
    policy, asked = resolver(
        {"ok.test": ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]}
    )

    assert policy.vet("OK.test.", 443) == (
        "93.184.215.14",
        "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
    )
    assert asked == ["ok.test"]


def test_a_literal_address_is_checked_without_asking_the_resolver() -> None:
    policy, asked = resolver({})

    with pytest.raises(EgressRefusedError, match=r"^169\.254\.169\.254 is link-local$"):
        policy.vet("169.254.169.254", 80)
    with pytest.raises(EgressRefusedError, match="loopback"):
        policy.vet("::ffff:127.0.0.1", 80)
    assert asked == []


def test_a_name_that_does_not_resolve_is_a_resolve_error_not_a_refusal() -> None:
    policy, _ = resolver({"empty.test": []})

    with pytest.raises(EgressResolveError, match=r"could not resolve nowhere\.test"):
        policy.vet("nowhere.test", 80)
    with pytest.raises(EgressResolveError, match="no addresses"):
        policy.vet("empty.test", 80)


def test_a_name_with_too_many_addresses_is_refused() -> None:
    many = [f"93.184.{i // 200}.{i % 200 + 1}" for i in range(MAX_ADDRESSES + 1)]
    policy, _ = resolver({"many.test": many})

    with pytest.raises(EgressRefusedError, match="more than"):
        policy.vet("many.test", 80)


def test_an_allowed_network_lets_its_addresses_through_and_no_others() -> None:
    def resolve(host: str, port: int) -> list[str]:
        return {"db.test": ["10.1.2.3"], "other.test": ["10.9.9.9"]}[host]

    policy = EgressPolicy(["10.1.0.0/16", "::1"], resolve)

    assert policy.vet("db.test", 5432) == ("10.1.2.3",)
    assert policy.vet("::1", 80) == ("::1",)
    (mapped,) = policy.vet("::ffff:10.1.0.7", 80)
    assert ipaddress.ip_address(mapped) == ipaddress.ip_address("::ffff:10.1.0.7")
    with pytest.raises(EgressRefusedError, match="private"):
        policy.vet("other.test", 5432)


def test_an_allowed_host_name_lets_every_address_it_resolves_to_through() -> None:
    def resolve(host: str, port: int) -> list[str]:
        return ["10.0.0.5"]

    policy = EgressPolicy(["internal.test", "*.corp.test"], resolve)

    assert policy.vet("internal.test", 80) == ("10.0.0.5",)
    assert policy.vet("api.eu.corp.test", 80) == ("10.0.0.5",)
    with pytest.raises(EgressRefusedError):
        policy.vet("corp.test", 80)
    with pytest.raises(EgressRefusedError):
        policy.vet("notinternal.test", 80)


@pytest.mark.parametrize("entry", ["not a host", "10.0.0.0/33", "", "*.", "a..b"])
def test_an_allow_entry_that_is_neither_network_nor_host_is_an_error(entry: str) -> None:
    with pytest.raises(ValueError, match="egress allow entry"):
        AllowList.parse([entry])


@pytest.mark.parametrize(
    ("host", "refusal"),
    [
        ("127.0.0.1", "127.0.0.1 is loopback"),
        ("localhost", "localhost is loopback"),
        ("api.localhost", "api.localhost is loopback"),
        ("169.254.169.254", "169.254.169.254 is link-local"),
        ("2852039166", "2852039166 is link-local"),
        ("::ffff:169.254.169.254", "::ffff:169.254.169.254 is link-local (it carries"),
        ("fd00:ec2::254", "fd00:ec2::254 is private"),
    ],
)
def test_literal_refusal_names_what_a_url_names_without_resolving(host: str, refusal: str) -> None:
    policy, asked = resolver({})

    found = policy.literal_refusal(host)

    assert found is not None
    assert found.startswith(refusal)
    assert asked == []


def test_literal_refusal_lets_names_and_allowed_addresses_pass() -> None:
    policy = EgressPolicy(["127.0.0.0/8"])

    assert policy.literal_refusal("evil.test") is None
    assert policy.literal_refusal("localhost") is None
    assert policy.literal_refusal("127.0.0.1") is None
    assert policy.literal_refusal("10.0.0.5") == "10.0.0.5 is private"


@pytest.mark.parametrize(
    ("allow", "address"),
    [
        (["169.254.0.0/16"], "169.254.169.254"),
        (["169.254.170.0/24"], "169.254.170.2"),
        (["fd00::/8"], "fd00:ec2::254"),
        (["::ffff:0:0/96"], "::ffff:169.254.169.254"),
    ],
)
def test_no_allow_list_opens_a_credential_endpoint(allow: list[str], address: str) -> None:
    by_network = EgressPolicy(allow, lambda host, port: [address])
    by_name = EgressPolicy(["metadata.test"], lambda host, port: [address])

    for policy in (by_network, by_name):
        with pytest.raises(EgressRefusedError, match="credential endpoint"):
            policy.vet("metadata.test", 80)
    assert "credential endpoint" in (by_network.literal_refusal(address) or ""), (
        f"a credential endpoint is refused whatever the allow list: {allow} opened {address}"
    )
