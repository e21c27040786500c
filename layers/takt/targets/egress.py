"""Where an HTTP target may connect: the address policy, name resolution, and the pinned address.

A scheduler that POSTs to URLs its tenants choose must not become a way into the network it runs
in: the instance metadata service (169.254.169.254, fd00:ec2::254), Fargate's credential endpoint
(169.254.170.2), the Lambda runtime API on localhost, or a VPC's private services. So a target's
host is resolved once per request (and once per redirect hop), every address it resolves to is
checked, and the connection is then made to one of those vetted addresses, never to a name that
could resolve differently a moment later (DNS rebinding).

An address is refused when it is not on the public internet: loopback, private (RFC 1918, unique
local fc00::/7), link-local, shared CGNAT space, unspecified, multicast, or one of IANA's special
ranges (documentation, benchmarking, protocol assignments, class E). IPv6 forms that carry an IPv4
address (IPv4-mapped, IPv4-compatible, 6to4, NAT64's well-known prefix) are judged by the IPv4
address they carry, so `::ffff:10.0.0.5` is as private as `10.0.0.5`.

The deployment's allow list opens exceptions: a CIDR (or single address) lets those addresses
through, and a host name (or `*.suffix`) lets every address that name resolves to through. The
cloud's credential endpoints (`CREDENTIAL_ENDPOINTS`) are the one exception no allow list opens:
`fc00::/7`, which local mode allows for the developer's own networks, holds the instance metadata
service's IPv6 address, and no job has a reason to call an endpoint that hands out the runtime's
credentials. The resolver is a function, so tests can map names to addresses without a DNS server.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence

from takt.models.egress import AllowList, IPAddress, carried_v4, normal_host

Resolver = Callable[[str, int], Sequence[str]]

# A name resolving to more addresses than this is refused rather than checked without end.
MAX_ADDRESSES = 32

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

# Checked in order: the first network an address falls in names the reason.
_FORBIDDEN_V4: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("100.64.0.0/10"), "shared (CGNAT)"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("192.88.99.0/24"), "reserved"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_FORBIDDEN_V6: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fc00::/7"), "private"),
    (_V6("ff00::/8"), "multicast"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("2001:2::/48"), "benchmarking"),
    (_V6("2001::/23"), "reserved"),
    (_V6("64:ff9b:1::/48"), "reserved"),
    (_V6("100::/64"), "reserved"),
    (_V6("fec0::/10"), "reserved"),
)
# Where AWS hands out credentials, refused whatever the allow list says: the instance metadata
# service (IPv4 and IPv6), the ECS and Fargate task credential endpoint, and EKS Pod Identity's
# agent (IPv4 and IPv6).
CREDENTIAL_ENDPOINTS: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "169.254.170.23", "fd00:ec2::23")
)
_IPV4_COMPATIBLE = _V6("::/96")
# Everything routable on the IPv6 internet is in 2000::/3; the rest is reserved.
_GLOBAL_UNICAST_V6 = _V6("2000::/3")


class EgressRefusedError(Exception):
    """The target's host is, or resolves to, an address the policy does not let takt call."""


class EgressResolveError(Exception):
    """The target's host could not be resolved (maybe for now: DNS fails transiently too)."""


def forbidden_reason(address: IPAddress) -> str | None:
    """Why `address` is not on the public internet (`"private"`, ...), or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        return _forbidden_v6(address)
    for network, reason in _FORBIDDEN_V4:
        if address in network:
            return reason
    return None if address.is_global else "reserved"


def _forbidden_v6(address: ipaddress.IPv6Address) -> str | None:
    carried = carried_v4(address)
    if carried is not None:
        reason = forbidden_reason(carried)
        return None if reason is None else f"{reason} (it carries {carried})"
    plain = ipaddress.IPv6Address(int(address))  # without a scope id (`fe80::1%eth0`)
    for network, reason in _FORBIDDEN_V6:
        if plain in network:
            return reason
    if plain in _IPV4_COMPATIBLE or plain not in _GLOBAL_UNICAST_V6:
        return "reserved"
    return None


def is_credential_endpoint(address: IPAddress) -> bool:
    """Whether `address` is one of `CREDENTIAL_ENDPOINTS`, in any form (`::ffff:169.254.169.254`,
    `fd00:ec2::254%eth0`)."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = carried_v4(address)
        if carried is not None:
            return carried in CREDENTIAL_ENDPOINTS
        return ipaddress.IPv6Address(int(address)) in CREDENTIAL_ENDPOINTS
    return address in CREDENTIAL_ENDPOINTS


def parse_address(host: str) -> IPAddress | None:
    """The address a URL's host names literally, in any form `getaddrinfo` would accept for
    IPv4 (`127.1`, `2852039166`, `0x7f.1`), or None when the host is a name."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if ":" in bare or not bare or not all(c.isalnum() or c == "." for c in bare):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(bare))
    except OSError:
        return None


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses `getaddrinfo` gives for a TCP connection to (host, port), in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class EgressPolicy:
    """Decides, for one request, which addresses of a host takt may connect to."""

    def __init__(self, allow: Iterable[str] = (), resolver: Resolver = system_resolver) -> None:
        self.allow = AllowList.parse(allow)
        self._resolve = resolver

    def refusal(self, address: IPAddress, *, host_allowed: bool = False) -> str | None:
        """Why the policy refuses `address`, or None when takt may connect to it (`host_allowed`:
        the name it was resolved from is on the allow list)."""
        reason = forbidden_reason(address)
        if reason is None:
            return None
        if not host_allowed and not self.allow.allows_address(address):
            return reason
        if is_credential_endpoint(address):
            return f"{reason}: a credential endpoint, which no allow list opens"
        return None

    def vet(self, host: str, port: int) -> tuple[str, ...]:
        """The addresses to connect to for (host, port), all of them allowed, in the resolver's
        order; EgressRefusedError if ANY address is refused (a name that resolves to a public
        and a private address is refused, whichever one a connection would have picked)."""
        literal = parse_address(host)
        if literal is not None:
            addresses: list[IPAddress] = [literal]
        else:
            addresses = self._lookup(host, port)
        host_allowed = self.allow.allows_host(host)
        for address in addresses:
            reason = self.refusal(address, host_allowed=host_allowed)
            if reason is not None:
                shown = host if literal is not None else f"{host} resolves to {address}, which"
                raise EgressRefusedError(f"{shown} is {reason}")
        return tuple(str(a) for a in addresses)

    def _lookup(self, host: str, port: int) -> list[IPAddress]:
        try:
            answers = self._resolve(normal_host(host), port)
        except (OSError, UnicodeError) as exc:
            raise EgressResolveError(f"could not resolve {host}: {exc}") from None
        if not answers:
            raise EgressResolveError(f"could not resolve {host}: no addresses")
        if len(answers) > MAX_ADDRESSES:
            raise EgressRefusedError(f"{host} resolves to more than {MAX_ADDRESSES} addresses")
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                addresses.append(ipaddress.ip_address(answer))
            except ValueError:
                raise EgressRefusedError(f"{host} resolves to {answer!r}, not an address") from None
        return addresses

    def literal_refusal(self, host: str) -> str | None:
        """What a job's URL names that the policy would refuse without resolving anything: a
        literal address or a `localhost` name (the check at create time; the check at call time
        is still the guarantee)."""
        host_allowed = self.allow.allows_host(host)
        literal = parse_address(host)
        if literal is not None:
            reason = self.refusal(literal, host_allowed=host_allowed)
            return None if reason is None else f"{host} is {reason}"
        if host_allowed:
            return None
        name = normal_host(host)
        is_localhost = name == "localhost" or name.endswith(".localhost")
        if is_localhost and self.refusal(ipaddress.IPv4Address("127.0.0.1")) is not None:
            return f"{host} is loopback"
        return None
