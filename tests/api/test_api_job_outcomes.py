"""A job's last outcome when a success that changes nothing else is not written to the job:
the API shows the newest ended execution, and an older outcome noted after a newer success
never stands as the job's state (`Lifecycle._note_outcome`). A listing shows each job as its
own page does, reading the histories it needs at once on a bounded pool
(`JobService.with_newest_outcomes`)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from takt.api.jobs import OUTCOME_THREADS
from takt.clock import ManualClock
from takt.config import Settings
from takt.executions.lifecycle import Lifecycle
from takt.executions.rules import Report
from takt.models.ids import format_time
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobStatus
from takt.wiring import Services, build_services, install
from takt_cli.metering.meter import OUTSIDE, Meter
from tests.api.harness import TENANT, Api
from tests.support.jobs import make_execution, make_job, store_execution
from tests.support.lanes import RecordingLanes


def fired_one_off(svc: Services, clock: ManualClock) -> str:
    """Store a one-off the claim has fired an hour ago (completed, nothing noted yet): its
    history may hold a success the job does not name, so the API looks."""
    fired = make_job(
        now=clock.now(),
        next_run_time=None,
        run_at=clock.now() - timedelta(hours=1),
        target="https://svc/x",
        status=JobStatus.COMPLETED,
    )
    svc.jobs.create(fired)
    return fired.job_id


class Runs:
    """Executions of one job, leased and completed through the lifecycle as a worker does."""

    def __init__(
        self, api: Api, clock: ManualClock, *, one_off: bool = False, name: str = "hourly"
    ) -> None:
        self.svc, self.clock = api.svc, clock
        if one_off:
            self.job_id = fired_one_off(self.svc, clock)
        else:
            body = {"name": name, "interval": "1h", "target": "https://svc/x"}
            self.job_id = api.created_job(body)["id"]
        self.lifecycle = Lifecycle(
            self.svc.settings, self.svc.jobs, self.svc.executions, RecordingLanes(self.svc)
        )

    def start(self, hours_ago: int) -> ExecutionRecord:
        job = self.svc.jobs.get(TENANT, self.job_id)
        scheduled = self.clock.now().replace(minute=0, second=0, microsecond=0) - timedelta(
            hours=hours_ago
        )
        record = store_execution(
            self.svc, make_execution(job, scheduled, self.clock.now()), self.clock.now()
        )
        message = Outgoing.of(record).message
        return self.lifecycle.lease(message, "w-1", self.clock.now())

    def end(self, leased: ExecutionRecord, state: ExecState) -> None:
        self.clock.advance(1)
        assert self.lifecycle.complete(leased, state, self.clock.now(), Report(state.value))

    def noted(self) -> tuple[str | None, str | None]:
        job = self.svc.jobs.get(TENANT, self.job_id)
        return job.last_outcome, job.last_execution_id


def test_a_success_after_a_noted_success_is_not_written_but_shown(
    api: Api, clock: ManualClock
) -> None:
    runs = Runs(api, clock)
    first = runs.start(hours_ago=2)
    runs.end(first, ExecState.SUCCEEDED)
    second = runs.start(hours_ago=1)
    runs.end(second, ExecState.SUCCEEDED)

    shown = api.request("GET", f"/v1/jobs/{runs.job_id}").json
    [listed] = api.request("GET", "/v1/jobs").json["items"]

    assert runs.noted() == ("succeeded", first.execution_id)  # the second wrote nothing
    for job in (shown, listed):
        assert (job["last_outcome"], job["last_execution_id"]) == (
            "succeeded",
            second.execution_id,
        )
        assert job["last_run_at"] == format_time(clock.now())


def test_a_fired_one_offs_success_is_not_written_but_shown(api: Api, clock: ManualClock) -> None:
    runs = Runs(api, clock, one_off=True)
    run = runs.start(hours_ago=1)
    runs.end(run, ExecState.SUCCEEDED)

    job = api.request("GET", f"/v1/jobs/{runs.job_id}").json

    assert runs.noted() == (None, None)  # nothing written to the job
    assert (job["last_outcome"], job["last_execution_id"]) == ("succeeded", run.execution_id)
    assert job["last_run_at"] == format_time(clock.now())


def test_a_fired_one_offs_failure_is_noted(api: Api, clock: ManualClock) -> None:
    runs = Runs(api, clock, one_off=True)
    run = runs.start(hours_ago=1)
    runs.end(run, ExecState.FAILED)

    assert runs.noted() == ("failed", run.execution_id)
    [failing] = api.request("GET", "/v1/stats").json["failing_jobs"]
    assert failing["id"] == runs.job_id


def test_a_success_after_a_failure_is_noted_and_ends_the_streak(
    api: Api, clock: ManualClock
) -> None:
    runs = Runs(api, clock)
    runs.end(runs.start(hours_ago=2), ExecState.FAILED)
    second = runs.start(hours_ago=1)
    runs.end(second, ExecState.SUCCEEDED)

    assert runs.noted() == ("succeeded", second.execution_id)
    assert api.request("GET", "/v1/stats").json["failing_jobs"] == []


def test_an_older_failure_ending_after_a_newer_unnoted_success_does_not_stand(
    api: Api, clock: ManualClock
) -> None:
    """The newer success read a settled job and skipped its note; the older run's failure,
    noted afterwards, finds it in the history and notes it after itself."""
    runs = Runs(api, clock)
    runs.end(runs.start(hours_ago=3), ExecState.SUCCEEDED)
    older = runs.start(hours_ago=2)
    newer = runs.start(hours_ago=1)
    runs.end(newer, ExecState.SUCCEEDED)
    assert runs.noted()[0] == "succeeded"  # skipped: the job was settled

    runs.end(older, ExecState.FAILED)

    assert runs.noted() == ("succeeded", newer.execution_id)
    assert api.request("GET", "/v1/stats").json["failing_jobs"] == []
    job = api.request("GET", f"/v1/jobs/{runs.job_id}").json
    assert (job["last_outcome"], job["last_execution_id"]) == ("succeeded", newer.execution_id)


class HistoryQueries:
    """Sees each query of the executions table (the history) as botocore is about to build it,
    on the real client the handler uses; `hold` keeps each one waiting until `hold` of them
    are waiting at once (so only queries made at the same time can get past it), up to
    `HOLD_TIMEOUT_SEC`, after which none is held any more."""

    HOLD_TIMEOUT_SEC = 10.0

    def __init__(self, svc: Services, *, hold: int = 0) -> None:
        self._events = svc.clients.dynamodb.meta.events
        self._table = svc.settings.executions_table
        self._hold = hold
        self._lock = threading.Lock()
        self._met = threading.Event()
        self.count = 0
        self.waiting = 0
        self.most_at_once = 0
        self.threads: set[str] = set()

    def __enter__(self) -> HistoryQueries:
        self._events.register("before-parameter-build.dynamodb.Query", self._query)
        return self

    def __exit__(self, *_: object) -> None:
        self._events.unregister("before-parameter-build.dynamodb.Query", self._query)

    def _query(self, params: dict[str, Any], **_: Any) -> None:
        if params.get("TableName") != self._table:
            return
        with self._lock:
            self.count += 1
            self.threads.add(threading.current_thread().name)
            self.waiting += 1
            self.most_at_once = max(self.most_at_once, self.waiting)
            if self.waiting >= self._hold:
                self._met.set()
        if not self._met.wait(self.HOLD_TIMEOUT_SEC):
            self._met.set()  # never met: the rest pass, and the test reads `most_at_once`
        with self._lock:
            self.waiting -= 1


def test_a_listing_shows_each_job_as_its_own_page_does_with_one_history_query_per_success(
    api: Api, clock: ManualClock
) -> None:
    recovered = Runs(api, clock, name="recovered")
    recovered.end(recovered.start(hours_ago=2), ExecState.FAILED)
    recovered.end(recovered.start(hours_ago=1), ExecState.SUCCEEDED)
    settled = Runs(api, clock, name="settled")
    settled.end(settled.start(hours_ago=2), ExecState.SUCCEEDED)
    unnoted = settled.start(hours_ago=1)
    settled.end(unnoted, ExecState.SUCCEEDED)
    fired = Runs(api, clock, one_off=True)
    fired_run = fired.start(hours_ago=1)
    fired.end(fired_run, ExecState.SUCCEEDED)
    never = api.created_job({"name": "never", "interval": "1h", "target": "https://svc/x"})

    with HistoryQueries(api.svc) as queries:
        listed = {job["id"]: job for job in api.request("GET", "/v1/jobs").json["items"]}

    # One each for the jobs whose noted outcome is a success or that fired with none noted.
    assert queries.count == 3
    assert listed.keys() == {recovered.job_id, settled.job_id, fired.job_id, never["id"]}
    for job_id, job in listed.items():
        assert job == api.request("GET", f"/v1/jobs/{job_id}").json
    assert listed[settled.job_id]["last_execution_id"] == unnoted.execution_id
    assert listed[fired.job_id]["last_execution_id"] == fired_run.execution_id
    assert listed[never["id"]]["last_outcome"] is None


def test_a_listing_queries_its_jobs_histories_at_once_on_a_bounded_pool(
    api: Api, clock: ManualClock
) -> None:
    """Each history query waits until `OUTCOME_THREADS` are waiting: queried one after another,
    the first waits in vain and the listing finds one at a time. The pool's threads carry its
    name, so a query made on the request's own thread, or on more threads, shows."""
    for _ in range(OUTCOME_THREADS + 2):
        fired_one_off(api.svc, clock)

    with HistoryQueries(api.svc, hold=OUTCOME_THREADS) as queries:
        resp = api.request("GET", "/v1/jobs")

    assert resp.status == 200
    assert len(resp.json["items"]) == OUTCOME_THREADS + 2
    assert queries.count == OUTCOME_THREADS + 2
    assert queries.most_at_once == OUTCOME_THREADS
    assert all(name.startswith("shown_") for name in queries.threads)
    assert len(queries.threads) <= OUTCOME_THREADS


def test_a_listings_history_queries_count_under_the_request_that_made_them(
    settings: Settings, clock: ManualClock
) -> None:
    """`takt bench` meters the API's calls per invocation (a context variable): the pool's
    threads run in a copy of the request's context, so none of its queries counts outside."""
    meter = Meter()
    svc = build_services(settings, clock, meter=meter)
    for _ in range(3):
        fired_one_off(svc, clock)
    before = meter.usage()
    install(svc)
    try:
        with HistoryQueries(svc) as queries, meter.invocation("api"):
            assert Api(svc).request("GET", "/v1/jobs").status == 200
    finally:
        install(None)

    calls = (meter.usage() - before).calls
    assert queries.count == 3
    assert calls[("api", "dynamodb", "Query")] > queries.count  # the page's own query too
    assert not [key for key in calls if key[0] == OUTSIDE]
