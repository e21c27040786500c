"""Scenario 18: jobs written as the API writes them (the job only, no due item), reaching the
scheduler only through the real indexer on the jobs table's stream, while the indexer lags or
fails.

- `lagging`: the indexer reads the stream once every 45 s, so a job created with its first run
  seconds away is indexed after that run's time;
- `failing`: each batch fails its first three tries (the indexer's due writes refused, as a
  throttled or broken table refuses them) and is read again, as the stream's retries do.

Every job is an interval job created while the scenario runs; the occurrences it must run are
counted on its anchor by the oracle (`expected_times`), from its first through the last claim's
reach, and each must reach its target (the side-effect log), however late. Lateness is
reported; the indexer's own counters are not read.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import boto3
import pytest

from takt.aws import make_clients
from takt.dispatch.indexer import DueIndexer
from takt.models.records import RetryPolicy
from takt.store.due import DueStore
from takt_cli.local.streams import StreamReader
from tests.chaos.conftest import Form, publish
from tests.chaos.sim import Sim
from tests.support.faults import CONFLICT_CODES, RandomWriteFaults
from tests.support.history import HistoryChecker, judge
from tests.support.jobs import make_job

LAG_SEC = 45
FAILED_TRIES = 3


class Indexer:
    """The real indexer over the stream, run as the scenario says: every `every` seconds, each
    batch failing its first `fail_first` tries (read again until it passes)."""

    def __init__(self, sim: Sim, every: int, fail_first: int) -> None:
        svc = sim.svc
        streams = boto3.session.Session(region_name=svc.settings.region).client(
            "dynamodbstreams", endpoint_url=svc.settings.aws_endpoint_url
        )
        # The indexer function's own client: its faults touch nothing else.
        dynamodb = make_clients(svc.settings).dynamodb
        self._reader = StreamReader(dynamodb, streams, svc.settings.jobs_table)
        self._indexer = DueIndexer(
            DueStore(dynamodb, svc.settings.due_table, svc.settings.due_shards), sim.clock
        )
        self._faults = RandomWriteFaults(
            dynamodb, seed=0, rate=1.0, codes=CONFLICT_CODES, operations=("PutItem",)
        )
        self._faults.active = False
        self._every = every
        self._fail_first = fail_first
        self._pending: list[dict[str, Any]] = []
        self._tries = 0
        self._seconds = 0
        self.failed = 0
        self.indexed = 0

    def second(self) -> None:
        self._seconds += 1
        if self._seconds % self._every:
            return
        batch = self._pending + self._reader.read()
        if not batch:
            return
        self._tries += 1
        self._faults.active = self._tries <= self._fail_first
        try:
            result = self._indexer.index_all(batch)
        except Exception:  # noqa: BLE001 - a failed batch: the stream hands it over again
            self.failed += 1
            self._pending = batch
            return
        finally:
            self._faults.active = False
        self._pending, self._tries = [], 0
        self.indexed += result.indexed

    def close(self) -> None:
        self._faults.__exit__(None, None, None)


@pytest.mark.parametrize("mode", ["lagging", "failing"])
def test_s18_jobs_reach_the_scheduler_through_an_indexer_that_lags_or_fails(
    make_sim: Any, checker: HistoryChecker, form: Form, seed: int, report_for: Any, mode: str
) -> None:
    rng = random.Random(seed)
    sim: Sim = make_sim()
    lagging = mode == "lagging"
    indexer = Indexer(
        sim, every=LAG_SEC if lagging else 1, fail_first=0 if lagging else FAILED_TRIES
    )
    created = form.pick(4, 12)
    ticker = sim.ticker()
    try:
        for second in range(form.pick(120, 300)):
            if second % 10 == 0 and len(sim.jobs) < created:
                now = sim.clock.now()
                period = rng.randint(5, 15)
                first = now + timedelta(seconds=rng.randint(2, period))
                job = make_job(
                    now=now,
                    next_run_time=first,
                    interval=f"{period}s",
                    anchor=first,
                    target="handler:chaos.effect",
                    payload={"log": str(sim.log.path), "fail": False},
                    catchup="all",
                    catchup_window="1h",
                    retry=RetryPolicy(max_attempts=3, initial_interval="2s"),
                )
                sim.svc.jobs.create(job)  # what the API writes: the job, never its due item
                sim.jobs.append(job)
            indexer.second()
            sim.step(ticker)
        sim.settle(10)
    finally:
        indexer.close()

    report = judge(
        checker,
        report_for(f"s18_indexer_{mode}"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
    )
    report.faults = {"lag_sec": LAG_SEC if lagging else 0, "failed_batches": indexer.failed}
    publish(report)

    assert report.problems() == []
    assert report.occurrences >= created
    if not lagging:
        assert indexer.failed >= FAILED_TRIES
