"""The attention index: dead and failed executions are listed per tenant and state, newest first,
and leave the listing when they move on (a re-run), whoever made the change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from takt.models.ids import format_time
from takt.models.records import ExecState, ExecutionRecord
from takt.store.executions import Transition
from takt.wiring import Services
from tests.support.jobs import TENANT, make_execution, make_job, store_execution

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def pending(svc: Services, scheduled: datetime, tenant_id: str = TENANT) -> ExecutionRecord:
    job = make_job(now=T0, next_run_time=scheduled, tenant_id=tenant_id)
    return store_execution(svc, make_execution(job, scheduled, T0), T0)


def finish(
    svc: Services, record: ExecutionRecord, state: ExecState, at: datetime | None = None
) -> None:
    change = {"state": state} | ({"finished_at": format_time(at)} if at else {})
    svc.executions.transition(
        record.tenant_id,
        record.execution_id,
        Transition(expect={"attempt": record.attempt}, set=change, remove=("check_at",)),
    )


def listed(svc: Services, state: ExecState, tenant_id: str = TENANT, limit: int = 50) -> list[str]:
    records, _ = svc.executions.needing_attention(tenant_id, state, limit=limit, cursor=None)
    return [r.execution_id for r in records]


def test_dead_executions_are_listed_newest_death_first(svc: Services) -> None:
    first, second = pending(svc, T0), pending(svc, T0 + timedelta(seconds=1))
    finish(svc, second, ExecState.DEAD, T0 + timedelta(minutes=1))
    finish(svc, first, ExecState.DEAD, T0 + timedelta(minutes=2))

    assert listed(svc, ExecState.DEAD) == [first.execution_id, second.execution_id]


def test_dead_and_failed_are_listed_apart(svc: Services) -> None:
    dead, failed, succeeded = (pending(svc, T0 + timedelta(seconds=i)) for i in range(3))
    finish(svc, dead, ExecState.DEAD, T0)
    finish(svc, failed, ExecState.FAILED, T0)
    finish(svc, succeeded, ExecState.SUCCEEDED, T0)

    assert listed(svc, ExecState.DEAD) == [dead.execution_id]
    assert listed(svc, ExecState.FAILED) == [failed.execution_id]


def test_a_re_run_leaves_the_listing(svc: Services) -> None:
    record = pending(svc, T0)
    finish(svc, record, ExecState.DEAD, T0)

    svc.executions.transition(
        TENANT,
        record.execution_id,
        Transition(expect={"state": ExecState.DEAD}, set={"state": ExecState.PENDING}),
    )

    assert listed(svc, ExecState.DEAD) == []
    item = svc.executions.get(TENANT, record.execution_id)
    assert item.state == ExecState.PENDING


def test_a_change_without_finished_at_sorts_by_its_occurrence(svc: Services) -> None:
    early, late = pending(svc, T0), pending(svc, T0 + timedelta(hours=1))
    finish(svc, late, ExecState.DEAD)
    finish(svc, early, ExecState.DEAD)

    assert listed(svc, ExecState.DEAD) == [late.execution_id, early.execution_id]


def test_another_tenants_executions_are_not_listed(svc: Services) -> None:
    finish(svc, pending(svc, T0, tenant_id="tenant-b"), ExecState.DEAD, T0)

    assert listed(svc, ExecState.DEAD) == []
    assert len(listed(svc, ExecState.DEAD, tenant_id="tenant-b")) == 1


def test_pages_cover_every_shard_once_in_order(svc: Services) -> None:
    records = [pending(svc, T0 + timedelta(seconds=i)) for i in range(7)]
    for i, record in enumerate(records):
        finish(svc, record, ExecState.DEAD, T0 + timedelta(minutes=i))
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = svc.executions.needing_attention(
            TENANT, ExecState.DEAD, limit=3, cursor=cursor
        )
        seen += [r.execution_id for r in page]
        assert len(page) <= 3
        if cursor is None:
            break

    assert seen == [r.execution_id for r in reversed(records)]


def test_the_count_covers_every_shard(svc: Services) -> None:
    for i in range(5):
        finish(svc, pending(svc, T0 + timedelta(seconds=i)), ExecState.DEAD, T0)

    assert svc.executions.count_needing_attention(TENANT, ExecState.DEAD) == 5
    assert svc.executions.count_needing_attention(TENANT, ExecState.FAILED) == 0


def test_a_malformed_cursor_is_a_value_error(svc: Services) -> None:
    with pytest.raises(ValueError, match="malformed cursor"):
        svc.executions.needing_attention(TENANT, ExecState.DEAD, limit=5, cursor="eyJ4IjoxfQ")
