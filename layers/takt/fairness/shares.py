"""Weighted fair dispatch between tenants: who goes to the fast lanes, and who is claimed now.

Two places decide, both bounded per call rather than per execution:

- At send time (`DispatchShares.route`): each tenant's messages of a send go to their own lane
  while its dispatch bucket has tokens (`fair_dispatch_per_sec` times the tenant's weight a
  second), and overflow into `overflow_lane` beyond that: one bucket update per tenant per send.
  A quiet tenant stays under its rate, so its messages never queue behind a flood; the flood
  still runs on every idle worker, from the overflow lane (work-conserving).
- At claim time (`fair_take`): a claim takes at most `claim_max_items` due items, shared between
  the tenants with due items by weight, oldest first within a tenant; what is left waits in the
  due index for the next tick. A tenant alone takes the whole budget. This bounds a tick's work,
  so a flood can no longer hold a partition's claim (and the tick waiting for it) for minutes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from takt.clock import Clock
from takt.config import Settings
from takt.models.lanes import Outgoing
from takt.store.buckets import TokenBuckets

COUNTER = "dispatch"

T = TypeVar("T")


class DispatchShares:
    def __init__(self, settings: Settings, buckets: TokenBuckets, clock: Clock) -> None:
        self._settings = settings
        self._buckets = buckets
        self._clock = clock

    def route(self, outgoing: Sequence[Outgoing]) -> list[Outgoing]:
        """`outgoing` with each tenant's messages beyond its share moved to the overflow lane.

        Only messages sent without a delay are shaped: a delayed one (a retry, a message sent
        back by a worker) already waits its turn. Order within a tenant is kept, so the oldest
        take the tokens.
        """
        per_sec = self._settings.fair_dispatch_per_sec
        overflow = self._settings.overflow_lane
        if per_sec is None:
            return list(outgoing)
        by_tenant: dict[str, list[int]] = {}
        for index, item in enumerate(outgoing):
            if item.delay_sec == 0 and item.lane != overflow:
                by_tenant.setdefault(item.message.tenant_id, []).append(index)
        routed = list(outgoing)
        now = self._clock.now()
        for tenant_id, indexes in by_tenant.items():
            rate = per_sec * self._settings.limits_for(tenant_id).weight
            burst = max(1, math.ceil(rate * self._settings.fair_dispatch_burst_sec))
            grant = self._buckets.take(tenant_id, COUNTER, len(indexes), rate, burst, now)
            for index in indexes[grant.granted :]:
                routed[index] = replace(routed[index], lane=overflow)
        return routed


def fair_take(
    items: Sequence[T], budget: int, tenant_of: Callable[[T], str], weight_of: Callable[[str], int]
) -> tuple[list[T], list[T]]:
    """(taken, left): at most `budget` of `items`, shared between tenants by weight.

    Weighted round-robin: each round a tenant takes up to its weight of its own items, oldest
    first, until the budget is spent, and each round visits the tenants with the fewest due items
    first, so a quiet tenant is served even when the budget is smaller than the number of tenants
    (a flood, listed first in due order, would otherwise take every round's first places). Items
    keep their order within a tenant; a tenant with nothing left drops out, so the budget is
    always spent while anything is left (work-conserving).
    """
    if len(items) <= budget:
        return list(items), []
    queues: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        queues.setdefault(tenant_of(item), []).append(index)
    taken: set[int] = set()
    cursors = dict.fromkeys(queues, 0)
    order = sorted(queues, key=lambda tenant_id: len(queues[tenant_id]))
    while len(taken) < budget:
        for tenant_id in order:
            queue = queues[tenant_id]
            start = cursors[tenant_id]
            stop = min(len(queue), start + weight_of(tenant_id), start + budget - len(taken))
            taken.update(queue[start:stop])
            cursors[tenant_id] = stop
            if len(taken) >= budget:
                break
    return (
        [item for i, item in enumerate(items) if i in taken],
        [item for i, item in enumerate(items) if i not in taken],
    )
