"""What a worker checks before it leases an execution: the target host's rate and the tenant's
running cap. Both push back instead of failing: the message comes back later, the execution
stays pending at the same attempt, no attempt is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from takt.clock import Clock
from takt.config import Settings
from takt.models.lanes import LaneMessage
from takt.models.records import ExecState
from takt.observability import logger
from takt.store.buckets import TokenBuckets
from takt.store.errors import NotFoundError
from takt.store.executions import ExecutionStore
from takt.store.running_slots import RunningSlots

HOST_PARTITION = "#host"


@dataclass(frozen=True)
class Wait:
    """Not now: offer the message again in `delay_sec` seconds."""

    delay_sec: int
    reason: str


class WorkerGate:
    def __init__(
        self,
        settings: Settings,
        buckets: TokenBuckets,
        slots: RunningSlots,
        clock: Clock,
        is_running: Callable[[str, str], bool],
    ) -> None:
        self._settings = settings
        self._buckets = buckets
        self._slots = slots
        self._clock = clock
        self._is_running = is_running

    def admit(self, message: LaneMessage) -> Wait | None:
        """None when the execution may be leased now (its running slot, if any, is taken)."""
        limit = self._settings.host_rate_limits.get(message.host) if message.host else None
        if limit is not None and message.host is not None:
            grant = self._buckets.take(
                HOST_PARTITION, message.host, 1, limit.per_sec, limit.burst, self._clock.now()
            )
            if not grant.granted:
                return Wait(max(1, math.ceil(grant.retry_after_sec)), "rate_limited")
        cap = self._settings.limits_for(message.tenant_id).max_running
        if cap is not None and not self._acquire(message, cap):
            return Wait(self._settings.running_cap_retry_sec, "running_cap")
        return None

    def release(self, tenant_id: str, execution_id: str) -> None:
        """Free the execution's running slot, when its tenant has a cap."""
        if self._settings.limits_for(tenant_id).max_running is not None:
            self._slots.release(tenant_id, execution_id)

    def _acquire(self, message: LaneMessage, cap: int) -> bool:
        tenant_id = message.tenant_id
        if self._slots.acquire(tenant_id, message.execution_id, cap):
            return True
        if not self._slots.repair_due(tenant_id):
            return False
        freed = self._slots.repair(
            tenant_id, lambda execution_id: self._is_running(tenant_id, execution_id)
        )
        if not freed:
            return False
        logger.warning("leaked running slots freed", tenant_id=tenant_id, freed=freed)
        return self._slots.acquire(tenant_id, message.execution_id, cap)


def running_check(executions: ExecutionStore) -> Callable[[str, str], bool]:
    """Whether an execution is running now (a consistent read): what `repair` keeps a slot for."""

    def running(tenant_id: str, execution_id: str) -> bool:
        try:
            return executions.get(tenant_id, execution_id).state == ExecState.RUNNING
        except NotFoundError:
            return False

    return running
