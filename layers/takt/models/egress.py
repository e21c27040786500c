"""The deployment's egress allow list: the exceptions to the address policy of HTTP targets.

A domain type, not the policy itself (`takt.targets.egress`): the settings validate the list at
start-up, and the CDK app checks a deployment's context with it, without loading the HTTP target.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Prefixes whose low 32 bits are an IPv4 address the packets end up at.
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def normal_host(host: str) -> str:
    """A host name as compared: without brackets, a trailing dot or capitals."""
    return host.strip("[]").rstrip(".").lower()


def carried_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, 6to4 or NAT64 address reaches, if it is one."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


@dataclass(frozen=True)
class AllowList:
    """The deployment's exceptions: networks, exact host names and `*.suffix` host patterns."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        """ValueError naming the first entry that is neither a CIDR, an address nor a host."""
        networks: list[IPNetwork] = []
        hosts: set[str] = set()
        suffixes: list[str] = []
        for raw in entries:
            entry = raw.strip()
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            name = normal_host(entry.removeprefix("*."))
            if not name or not all(label and _is_label(label) for label in name.split(".")):
                raise ValueError(f"egress allow entry {raw!r} is not a CIDR, address or host name")
            if entry.startswith("*."):
                suffixes.append("." + name)
            else:
                hosts.add(name)
        return cls(tuple(networks), frozenset(hosts), tuple(suffixes))

    def allows_host(self, host: str) -> bool:
        name = normal_host(host)
        return name in self.hosts or any(name.endswith(s) for s in self.suffixes)

    def allows_address(self, address: IPAddress) -> bool:
        forms: list[IPAddress] = [address]
        if isinstance(address, ipaddress.IPv6Address):
            forms = [ipaddress.IPv6Address(int(address))]
            carried = carried_v4(address)
            if carried is not None:
                forms.append(carried)
        return any(form in network for form in forms for network in self.networks)


def _is_label(label: str) -> bool:
    return len(label) <= 63 and all(c.isalnum() or c in "-_" for c in label)
