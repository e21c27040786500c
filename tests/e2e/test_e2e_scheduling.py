"""End to end: `takt local` driven over HTTP, calling a real HTTP target on loopback.

Timing is asserted as ordering and completion within generous deadlines, never as a tight bound
on the test's own clock; the lag the runtime records for each execution is printed (see the
"takt e2e measurements" section of the pytest summary).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from takt.models.ids import format_time, parse_time
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e

Record = Callable[[str, object], None]

# Deadlines for "it happened": far above the expected seconds, so a loaded machine does not flake.
DONE_WITHIN_SEC = 30.0
FAST_RETRY = {"initial_interval": "1s", "max_interval": "2s"}
# What the runtime adds to a backoff delay: SQS delays are whole seconds (rounded up), a poller
# may be in its 1 s long poll of another lane, and then the worker reads and leases.
DISPATCH_SLACK_SEC = 2.5


def in_state(
    takt: LocalTakt, execution_id: str, states: set[str], timeout: float = DONE_WITHIN_SEC
) -> dict[str, Any]:
    return poll(
        lambda: takt.execution(execution_id),
        lambda e: e["state"] in states,
        timeout,
        f"execution {execution_id} in {sorted(states)}",
    )


def first_execution(takt: LocalTakt, job_id: str) -> dict[str, Any]:
    executions = poll(
        lambda: takt.executions(job_id), bool, DONE_WITHIN_SEC, f"an execution of {job_id}"
    )
    return executions[-1]


def at(text: str) -> datetime:
    return parse_time(text)


def test_one_off_job_runs_once_after_its_time(
    takt_local: LocalTakt, receiver: Receiver, record_property: Record
) -> None:
    run_at = datetime.now(UTC) + timedelta(seconds=2)
    target = receiver.path()
    job = takt_local.create_job({"run_at": format_time(run_at), "target": target})

    execution = in_state(takt_local, first_execution(takt_local, job["id"])["id"], {"succeeded"})

    record_property("one-off lag_ms", execution["lag_ms"])
    print(f"one-off run_at {format_time(run_at)}: lag {execution['lag_ms']} ms")
    assert at(execution["scheduled_time"]) == at(format_time(run_at))
    assert at(execution["started_at"]) >= at(execution["scheduled_time"])
    assert execution["lag_ms"] >= 0
    assert (execution["attempt"], execution["trigger"]) == (1, "schedule")
    # A one-off is done once it fired: no next run, a single execution, a single call.
    done = takt_local.request("GET", f"/v1/jobs/{job['id']}").body
    assert (done["status"], done["next_run_time"]) == ("completed", None)
    assert [e["id"] for e in takt_local.executions(job["id"])] == [execution["id"]]
    hits = receiver.hits(target)
    assert len(hits) == 1
    assert hits[0].at >= at(execution["scheduled_time"]).timestamp()


def test_cron_with_seconds_fires_every_two_seconds(
    takt_local: LocalTakt, receiver: Receiver, record_property: Record
) -> None:
    target = receiver.path()
    job = takt_local.create_job({"schedule": "*/2 * * * * *", "target": target})
    try:
        executions = poll(
            lambda: takt_local.executions(job["id"]),
            lambda items: sum(e["state"] == "succeeded" for e in items) >= 2,
            DONE_WITHIN_SEC,
            "two succeeded runs of the cron job",
        )
    finally:
        takt_local.delete_job(job["id"])

    times = sorted(at(e["scheduled_time"]) for e in executions)
    record_property("cron lags_ms", [e["lag_ms"] for e in executions])
    assert len(set(times)) == len(times)
    assert all(t.second % 2 == 0 and t.microsecond == 0 for t in times)
    # Every occurrence since the first has an execution (run or recorded skipped): no gaps.
    assert [b - a for a, b in itertools.pairwise(times)] == [timedelta(seconds=2)] * (
        len(times) - 1
    )
    assert len(receiver.hits(target)) >= 2


def test_interval_job_fires_every_two_seconds_from_its_creation(
    takt_local: LocalTakt, receiver: Receiver, record_property: Record
) -> None:
    target = receiver.path()
    job = takt_local.create_job({"interval": "2s", "target": target})
    try:
        executions = poll(
            lambda: takt_local.executions(job["id"]),
            lambda items: sum(e["state"] == "succeeded" for e in items) >= 2,
            DONE_WITHIN_SEC,
            "two succeeded runs of the interval job",
        )
    finally:
        takt_local.delete_job(job["id"])

    times = sorted(at(e["scheduled_time"]) for e in executions)
    record_property("interval lags_ms", [e["lag_ms"] for e in executions])
    assert times[0] > at(job["created_at"])
    assert [b - a for a, b in itertools.pairwise(times)] == [timedelta(seconds=2)] * (
        len(times) - 1
    )


def test_target_failing_twice_succeeds_on_the_third_attempt_within_backoff(
    takt_local: LocalTakt, receiver: Receiver, record_property: Record
) -> None:
    target = receiver.path(first=[Reply(500), Reply(500)])
    job = takt_local.create_job(
        {"run_at": format_time(datetime.now(UTC)), "target": target, "retry": FAST_RETRY}
    )

    execution = in_state(takt_local, first_execution(takt_local, job["id"])["id"], {"succeeded"})

    assert execution["attempt"] == 3
    assert [a["outcome"] for a in execution["attempts"]] == ["retry", "retry", "succeeded"]
    hits = receiver.hits(target)
    assert [h.header("Takt-Attempt") for h in hits] == ["1", "2", "3"]
    gaps = [round(b.at - a.at, 3) for a, b in itertools.pairwise(hits)]
    record_property("retry gaps_sec (backoff ceiling 2 s)", gaps)
    # Full jitter: each wait is in [0, min(2 s, 1 s * 2^attempt)] plus the dispatch slack.
    assert all(0 <= gap <= 2 + DISPATCH_SLACK_SEC for gap in gaps), gaps


def test_every_attempt_carries_the_takt_headers_and_one_execution_id(
    takt_local: LocalTakt, receiver: Receiver
) -> None:
    target = receiver.path(first=[Reply(503), Reply(503)])
    job = takt_local.create_job(
        {
            "run_at": format_time(datetime.now(UTC)),
            "target": target,
            "retry": FAST_RETRY,
            "payload": {"report": "daily"},
        }
    )

    execution = in_state(takt_local, first_execution(takt_local, job["id"])["id"], {"succeeded"})

    hits = receiver.hits(target)
    assert len(hits) == 3
    for hit in hits:
        assert hit.header("Takt-Job-Id") == job["id"]
        assert hit.header("Takt-Execution-Id") == execution["id"]
        assert hit.header("Idempotency-Key") == execution["id"]
        assert hit.header("Takt-Scheduled-Time") == execution["scheduled_time"]
        assert hit.header("Content-Type") == "application/json"
        assert hit.json() == {"report": "daily"}


def test_permanent_404_fails_after_one_attempt(takt_local: LocalTakt, receiver: Receiver) -> None:
    target = receiver.path(then=Reply(404))
    job = takt_local.create_job(
        {"run_at": format_time(datetime.now(UTC)), "target": target, "retry": FAST_RETRY}
    )

    execution = in_state(
        takt_local, first_execution(takt_local, job["id"])["id"], {"failed", "dead", "succeeded"}
    )

    assert (execution["state"], execution["attempt"], execution["status_code"]) == (
        "failed",
        1,
        404,
    )
    assert len(execution["attempts"]) == 1
    assert len(receiver.hits(target)) == 1


def test_timed_out_call_is_retried_and_then_succeeds(
    takt_local: LocalTakt, receiver: Receiver
) -> None:
    target = receiver.path(first=[Reply(200, delay_sec=3)])
    job = takt_local.create_job(
        {
            "run_at": format_time(datetime.now(UTC)),
            "target": target,
            "timeout_sec": 1,
            "retry": FAST_RETRY,
        }
    )

    execution = in_state(takt_local, first_execution(takt_local, job["id"])["id"], {"succeeded"})

    assert execution["attempt"] == 2
    first = execution["attempts"][0]
    assert first["outcome"] == "retry"
    assert "timed out" in first["error"]
    assert len(receiver.hits(target)) == 2


def test_dead_after_max_attempts_then_rerun_succeeds(
    takt_local: LocalTakt, receiver: Receiver
) -> None:
    target = receiver.path(first=[Reply(500), Reply(500)])
    job = takt_local.create_job(
        {
            "run_at": format_time(datetime.now(UTC)),
            "target": target,
            "retry": {**FAST_RETRY, "max_attempts": 2},
        }
    )
    execution_id = first_execution(takt_local, job["id"])["id"]
    dead = in_state(takt_local, execution_id, {"dead", "succeeded", "failed"})
    assert (dead["state"], dead["attempt"]) == ("dead", 2)
    assert len(receiver.hits(target)) == 2

    rerun = takt_local.request("POST", f"/v1/executions/{execution_id}/retry")

    assert rerun.status == 202
    assert (rerun.body["state"], rerun.body["attempt"]) == ("pending", 3)
    done = in_state(takt_local, execution_id, {"succeeded", "dead", "failed"})
    assert (done["state"], done["attempt"]) == ("succeeded", 3)
    hits = receiver.hits(target)
    assert [h.header("Takt-Attempt") for h in hits] == ["1", "2", "3"]
    assert {h.header("Takt-Execution-Id") for h in hits} == {execution_id}
