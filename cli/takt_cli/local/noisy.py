"""`takt bench noisy`: the noisy-neighbour scenario on the local runtime.

Tenant A floods `flood` one-off executions all due at one instant; tenant B runs `b_rate` jobs a
second (interval jobs, spread over the seconds of their interval). The run has three windows of
`window_sec` each, on one runtime:

1. B alone: B's start lag as it is without a neighbour;
2. A floods while B runs: B's start lag under the flood, and how much of A completes;
3. A alone, B's jobs ended: how fast A drains with the machine to itself.

The local runtime does some 15-26 executions a second on this machine (moto-bound, see
docs/CAPACITY.md), so 20,000 executions cannot drain within minutes: the run is bounded in
time, and the report says how much of the flood completed. Start lags are what the workers
recorded at the lease (`lag_ms`); a B execution not started by the end of its window counts
with the lag it had reached then, so a starved tenant cannot look good by not running.

Every target is a loopback receiver that records each call's arrival per execution id; the
report counts any execution called twice and any finished execution that did not succeed.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from takt.api.jobs import JobService
from takt.api.models import JobCreate
from takt.models.ids import new_job_id
from takt.models.records import ExecState, ExecutionRecord, JobRecord, job_key
from takt.store.due import DueStore
from takt.store.items import execution_record, job_item
from takt.wiring import Services
from takt_cli.local.bench import Receiver, _occurrences, percentiles
from takt_cli.local.runtime import LocalRuntime, RuntimeOptions, free_port

FLOODER = "noisy-a"
STEADY = "noisy-b"


@dataclass(frozen=True)
class NoisyWorkload:
    """What a noisy-neighbour run does; printed with its report."""

    flood: int = 20_000
    b_rate: int = 10
    b_every_sec: int = 10
    # B's weight in fair dispatch (A's is 1): its share of the fast lanes, docs/FAIRNESS.md.
    b_weight: int = 1
    window_sec: int = 60
    # Fairness as shipped (docs/FAIRNESS.md): a backlogged tenant's claims of at least
    # `claim_max_items`, sized to keep the lanes `fair_queue_sec` ahead of their measured drain,
    # and its messages beyond that headroom in the overflow lane. None for both: fairness off.
    # A fixed dispatch share (`fair_dispatch_per_sec`) is off unless set.
    fair_dispatch_per_sec: float | None = None
    claim_max_items: int | None = 2
    fair_queue_sec: float | None = 0.5
    pollers: int = 4
    due_shards: int = 4
    create_threads: int = 8
    # A floor on how fast the flood is stored (batch writes): it sets how far ahead the flood is
    # due, so B's first window never overlaps storing it.
    store_per_sec: float = 70.0
    moto_process: bool = False


class NoisyBench:
    def __init__(
        self, workload: NoisyWorkload, *, progress: Callable[[str], None] | None = None
    ) -> None:
        self.workload = workload
        self._progress = progress or (lambda _: None)

    def run(self) -> dict[str, Any]:
        w = self.workload
        unlimited = {"max_jobs": None, "create_per_sec": None}
        env = {
            "TAKT_DUE_SHARDS": str(w.due_shards),
            "TAKT_TENANT_LIMIT_OVERRIDES": json.dumps(
                {FLOODER: unlimited, STEADY: {**unlimited, "weight": w.b_weight}}
            ),
            "TAKT_FAIR_DISPATCH_PER_SEC": _env_value(w.fair_dispatch_per_sec),
            "TAKT_CLAIM_MAX_ITEMS": _env_value(w.claim_max_items),
            "TAKT_FAIR_QUEUE_SEC": _env_value(w.fair_queue_sec),
        }
        saved = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        runtime = LocalRuntime(
            RuntimeOptions(
                port=free_port(),
                pollers=w.pollers,
                log_level="ERROR",
                console_dir=None,
                moto_process=w.moto_process,
            )
        )
        receiver = Receiver()
        try:
            runtime.start()
            logging.getLogger("werkzeug").setLevel(logging.ERROR)
            return self._run(runtime, receiver)
        finally:
            runtime.stop()
            receiver.stop()
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def _run(self, runtime: LocalRuntime, receiver: Receiver) -> dict[str, Any]:
        w = self.workload
        load_at_start = round(os.getloadavg()[0], 1)
        assert runtime.services is not None
        service = JobService(runtime.services.api)
        # The flood is stored first, due at an instant that leaves room for storing it (at a
        # conservative `store_per_sec`) and then for B's first window alone.
        margin = timedelta(seconds=w.flood / w.store_per_sec + 10)
        flood_at = (datetime.now(UTC) + margin + timedelta(seconds=w.window_sec)).replace(
            microsecond=0
        )
        start = flood_at - timedelta(seconds=w.window_sec)
        b_end = flood_at + timedelta(seconds=w.window_sec)
        end = b_end + timedelta(seconds=w.window_sec)
        self._progress(f"storing tenant A's flood: {w.flood} one-off jobs due {flood_at:%H:%M:%S}")
        created_at = time.monotonic()
        self._store_flood(runtime, receiver.url_for("/a"), flood_at)
        create_sec = time.monotonic() - created_at
        b_jobs = self._create(
            service,
            runtime.services.due,
            STEADY,
            [
                JobCreate(
                    name=f"steady-{i}",
                    interval=f"{w.b_every_sec}s",
                    start_at=start + timedelta(seconds=i % w.b_every_sec),
                    end_at=b_end - timedelta(milliseconds=1),
                    target=receiver.url_for("/b"),
                    # Every occurrence runs however late: a late one skipped by the catch-up
                    # policy would hide the lag this run measures.
                    catchup="all",
                )
                for i in range(w.b_rate * w.b_every_sec)
            ],
        )
        late = datetime.now(UTC) >= start
        if late:
            self._progress("warning: storing the flood took past B's first window's start")
        self._progress(
            f"tenant B: {w.b_rate}/s from {start:%H:%M:%S}; running until {end:%H:%M:%S}"
        )
        while datetime.now(UTC) < end:
            time.sleep(0.5)
        ended_at = datetime.now(UTC)
        found = {(r.job_id, r.scheduled_time): r for r in self._records(runtime, STEADY, b_jobs)}
        # Every occurrence B's jobs were due to run, from takt's own schedule math: one the
        # scheduler never claimed has no execution at all, and must count as unstarted.
        b_due = [(job.job_id, at) for job in b_jobs for at in _occurrences(job)]

        def b_lags(begin: datetime, until: datetime) -> dict[str, Any]:
            chosen = [(j, at) for j, at in b_due if begin <= at < until]
            lags = [_lag_sec(found.get((j, at)), at, ended_at) for j, at in chosen]
            # Where the lag comes from: the claim (created by the tick that claimed it) or the
            # lane and the workers after it.
            claimed = [found[key] for key in chosen if key in found]
            return {
                "occurrences": len(chosen),
                "not_started": sum(
                    1 for key in chosen if key not in found or found[key].lag_ms is None
                ),
                "start_lag_sec": percentiles(lags, digits=2),
                "claim_lag_sec": percentiles(
                    [(r.created_at - r.scheduled_time).total_seconds() for r in claimed],
                    digits=2,
                ),
            }

        def a_rate(begin: datetime, until: datetime) -> dict[str, Any]:
            done = receiver.arrivals("/a", begin.timestamp(), until.timestamp())
            return {
                "completed": done,
                "executions_per_sec": round(done / (until - begin).total_seconds(), 1),
            }

        b_records = list(found.values())
        finished = [r for r in b_records if r.state.terminal]
        a_total = receiver.arrivals("/a", 0, time.time() + 1)
        settings = runtime.services.settings
        return {
            "settings": {
                **asdict(self.workload),
                "flood_store_sec": round(create_sec, 1),
                "dispatch_ahead_sec": settings.dispatch_ahead_sec,
                "overflow_lane": settings.overflow_lane,
                "cpus": os.cpu_count(),
                # The machine is shared: its load during the run says how far to trust it.
                "load_average_1m_at_start": load_at_start,
                "load_average_1m_at_end": round(os.getloadavg()[0], 1),
            },
            "b_alone": b_lags(start, flood_at),
            "b_during_flood": b_lags(flood_at, b_end),
            "a_with_b": a_rate(flood_at, b_end),
            "a_alone": a_rate(b_end, end),
            "a_completed_of_flood": f"{a_total} of {w.flood}",
            "flood_stored_past_b_start": late,
            "checks": {
                "called_twice": receiver.called_twice(),
                "b_finished_not_succeeded": sum(
                    1 for r in finished if r.state != ExecState.SUCCEEDED
                ),
                "b_states": dict(Counter(r.state.value for r in b_records)),
            },
        }

    def _create(
        self, service: JobService, due: DueStore, tenant_id: str, bodies: list[JobCreate]
    ) -> list[JobRecord]:
        def one(body: JobCreate) -> JobRecord:
            job = service.create(tenant_id, body, None)[0]
            if job.next_run_time is not None:
                # Indexed now, whatever else indexes it (the same item): B's first occurrence
                # must not wait behind an index backlog the flood left.
                due.put(job.tenant_id, job.job_id, job.next_run_time, datetime.now(UTC))
            return job

        with ThreadPoolExecutor(self.workload.create_threads) as pool:
            return list(pool.map(one, bodies))

    def _store_flood(self, runtime: LocalRuntime, target: str, due: datetime) -> None:
        """A's one-off jobs and their due items, written as the API writes them but in batches
        of 25 items: through the API, storing 20,000 takes minutes on a loaded machine, and the
        scenario is about dispatching them, not creating them."""
        assert runtime.services is not None
        svc = runtime.services
        now = datetime.now(UTC)
        jobs = [
            JobRecord(
                tenant_id=FLOODER,
                job_id=new_job_id(),
                name=f"flood-{i}",
                run_at=due,
                anchor=now,
                target=target,
                next_run_time=due,
                created_at=now,
                updated_at=now,
            )
            for i in range(self.workload.flood)
        ]
        # Due items first, as the API indexes before it stores, so no job is ever unindexed.
        due_items = [svc.due.item(j.tenant_id, j.job_id, due, now) for j in jobs]
        for table, items in (
            (svc.settings.due_table, due_items),
            (svc.settings.jobs_table, [job_item(j) for j in jobs]),
        ):
            chunks = [items[i : i + 25] for i in range(0, len(items), 25)]
            with ThreadPoolExecutor(self.workload.create_threads) as pool:
                list(pool.map(lambda chunk, t=table: _batch_put(svc, t, chunk), chunks))

    def _records(
        self, runtime: LocalRuntime, tenant_id: str, jobs: list[JobRecord]
    ) -> list[ExecutionRecord]:
        assert runtime.services is not None
        db = runtime.services.clients.dynamodb
        table = runtime.services.settings.executions_table
        out: list[ExecutionRecord] = []
        for job in jobs:
            kwargs: dict[str, Any] = {
                "TableName": table,
                "KeyConditionExpression": "job_key = :k",
                "ExpressionAttributeValues": {":k": {"S": job_key(tenant_id, job.job_id)}},
                "ConsistentRead": True,
            }
            while True:
                resp = db.query(**kwargs)
                out += [execution_record(i) for i in resp.get("Items", [])]
                if "LastEvaluatedKey" not in resp:
                    break
                kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return out


def _lag_sec(record: ExecutionRecord | None, due: datetime, ended_at: datetime) -> float:
    """The recorded start lag, or for an occurrence not started by the end, the lag so far."""
    if record is not None and record.lag_ms is not None:
        return record.lag_ms / 1000
    return (ended_at - due).total_seconds()


def _env_value(value: float | int | None) -> str:
    return "null" if value is None else str(value)


def _batch_put(svc: Services, table: str, items: list[dict[str, Any]]) -> None:
    """Write up to 25 items, retrying what DynamoDB left unprocessed."""
    requests: list[Any] = [{"PutRequest": {"Item": item}} for item in items]
    for _ in range(10):
        resp = svc.clients.dynamodb.batch_write_item(RequestItems={table: requests})
        requests = list(resp.get("UnprocessedItems", {}).get(table, []))
        if not requests:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{len(requests)} items not written to {table}")
