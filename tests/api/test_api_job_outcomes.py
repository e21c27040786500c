"""A job's last outcome when a success that changes nothing else is not written to the job:
the API shows the newest ended execution, and an older outcome noted after a newer success
never stands as the job's state (`Lifecycle._note_outcome`)."""

from __future__ import annotations

from datetime import timedelta

from takt.clock import ManualClock
from takt.executions.lifecycle import Lifecycle
from takt.executions.rules import Report
from takt.models.ids import format_time
from takt.models.lanes import Outgoing
from takt.models.records import ExecState, ExecutionRecord, JobStatus
from tests.api.harness import TENANT, Api
from tests.support.jobs import make_execution, make_job, store_execution
from tests.support.lanes import RecordingLanes


class Runs:
    """Executions of one job, leased and completed through the lifecycle as a worker does."""

    def __init__(self, api: Api, clock: ManualClock, *, one_off: bool = False) -> None:
        self.svc, self.clock = api.svc, clock
        if one_off:
            # A one-off the claim has fired: completed, nothing noted yet.
            fired = make_job(
                now=clock.now(),
                next_run_time=None,
                run_at=clock.now() - timedelta(hours=1),
                target="https://svc/x",
                status=JobStatus.COMPLETED,
            )
            self.svc.jobs.create(fired)
            self.job_id = fired.job_id
        else:
            body = {"name": "hourly", "interval": "1h", "target": "https://svc/x"}
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
