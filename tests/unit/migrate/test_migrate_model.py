"""A re-import compares the job an earlier import made with the source's body by value."""

from __future__ import annotations

from typing import Any

from takt_cli.migrate.model import differences

BODY: dict[str, Any] = {
    "name": "sync",
    "schedule": "0 9 * * MON-FRI",
    "time_zone": "Europe/London",
    "start_at": "2026-07-01T00:00:00+00:00",
    "jitter": "15m",
    "catchup": "all",
    "catchup_window": "3600s",
    "retry": {"max_attempts": 3},
    "target": "arn:aws:sqs:us-east-1:123456789012:jobs",
    "payload": {"task": "sync"},
}
# The same job as the API shows it: defaults filled in, instants and durations spelled its way.
JOB: dict[str, Any] = {
    "id": "job_1",
    "name": "sync",
    "status": "active",
    "schedule": "0 9 * * MON-FRI",
    "interval": None,
    "run_at": None,
    "time_zone": "Europe/London",
    "dst": {"gap": "run", "overlap": "once"},
    "start_at": "2026-07-01T00:00:00Z",
    "end_at": None,
    "target": "arn:aws:sqs:us-east-1:123456789012:jobs",
    "tasks": None,
    "payload": {"task": "sync"},
    "retry": {
        "max_attempts": 3,
        "backoff": "exponential",
        "initial_interval": "5s",
        "max_interval": "1h",
        "jitter": "full",
    },
    "timeout_sec": 300,
    "priority": "default",
    "catchup": "all",
    "catchup_window": "1h",
    "overlap": "allow",
    "jitter": "900s",
    "pause_until": None,
    "calendars": None,
    "notify": None,
    "idempotency_key": "import:eventbridge:default/sync",
    "version": 3,
}


def test_the_same_job_spelled_the_apis_way_has_no_differences() -> None:
    assert differences(JOB, BODY) == []


def test_a_paused_job_and_a_changed_payload_are_named() -> None:
    changed = {**JOB, "status": "paused", "payload": {"task": "other"}}
    assert differences(changed, BODY) == ["payload", "status"]


def test_a_changed_instant_duration_or_retry_is_named() -> None:
    changed = {
        **JOB,
        "start_at": "2026-07-01T00:00:01Z",
        "jitter": "14m",
        "retry": {**JOB["retry"], "max_attempts": 4},
    }
    assert differences(changed, BODY) == ["jitter", "retry", "start_at"]
