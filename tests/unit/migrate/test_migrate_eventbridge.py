"""EventBridge Scheduler schedules to job bodies: every field of the mapping, and back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from takt_cli.migrate import eventbridge
from takt_cli.migrate.model import MappingError

NOW = datetime(2026, 6, 1, tzinfo=UTC)
QUEUE = "arn:aws:sqs:us-east-1:123456789012:jobs"


def _schedule(**fields: Any) -> dict[str, Any]:
    target = {
        "Arn": QUEUE,
        "RoleArn": "arn:aws:iam::123456789012:role/s",
        **fields.pop("Target", {}),
    }
    return {
        "Name": "sync",
        "GroupName": "default",
        "ScheduleExpression": "cron(0 9 ? * MON-FRI *)",
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "State": "ENABLED",
        "Target": target,
        **fields,
    }


def _body(**fields: Any) -> dict[str, Any]:
    (item,) = eventbridge.load(json.dumps(_schedule(**fields)), NOW)
    assert item.body is not None, item.reason
    return item.body


def test_every_field_maps() -> None:
    body = _body(
        ScheduleExpressionTimezone="Europe/London",
        State="DISABLED",
        FlexibleTimeWindow={"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15},
        StartDate="2026-07-01T00:00:00+00:00",
        EndDate="2027-07-01T00:00:00+00:00",
        Target={
            "Input": '{"task": "sync"}',
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600},
        },
    )

    assert body == {
        "name": "sync",
        "time_zone": "Europe/London",
        "schedule": "0 9 * * MON-FRI",
        "dst": {"gap": "skip", "overlap": "once"},
        "start_at": "2026-07-01T00:00:00+00:00",
        "end_at": "2027-07-01T00:00:00+00:00",
        "status": "paused",
        "jitter": "15m",
        "target": QUEUE,
        "payload": {"task": "sync"},
        "retry": {"max_attempts": 3},
        "catchup": "all",
        "catchup_window": "3600s",
    }


@pytest.mark.parametrize(
    ("expression", "interval"),
    [("rate(5 minutes)", "5m"), ("rate(1 hour)", "1h"), ("rate(2 days)", "2d")],
)
def test_a_rate_becomes_an_interval(expression: str, interval: str) -> None:
    assert _body(ScheduleExpression=expression)["interval"] == interval


def test_at_becomes_run_at_in_the_schedules_zone() -> None:
    body = _body(
        ScheduleExpression="at(2026-12-24T18:00:00)", ScheduleExpressionTimezone="Asia/Tokyo"
    )
    assert datetime.fromisoformat(body["run_at"]) == datetime(2026, 12, 24, 9, 0, tzinfo=UTC)


def test_at_in_the_past_is_refused() -> None:
    (item,) = eventbridge.load(
        json.dumps(_schedule(ScheduleExpression="at(2020-01-01T00:00:00)")), NOW
    )
    assert "in the past" in (item.reason or "")


def test_a_year_field_and_a_start_date_keep_the_later_start() -> None:
    body = _body(ScheduleExpression="cron(0 9 1 * ? 2027)", StartDate="2027-03-01T00:00:00Z")
    assert datetime.fromisoformat(body["start_at"]) == datetime(2027, 3, 1, tzinfo=UTC)
    assert datetime.fromisoformat(body["end_at"]).year == 2027


def test_text_input_is_a_text_payload_and_sns_and_bus_targets_are_kept() -> None:
    sns = "arn:aws:sns:us-east-1:123456789012:t"
    bus = "arn:aws:events:us-east-1:123456789012:event-bus/orders"
    assert _body(Target={"Arn": sns, "Input": "hello"})["payload"] == "hello"
    assert _body(Target={"Arn": bus})["target"] == bus


def test_a_dead_letter_queue_is_noted_not_lost_silently() -> None:
    dlq = "arn:aws:sqs:us-east-1:123456789012:dlq"
    (item,) = eventbridge.load(
        json.dumps(_schedule(Target={"DeadLetterConfig": {"Arn": dlq}})), NOW
    )
    assert item.body is not None
    assert any(dlq in note for note in item.notes)


def test_many_retries_are_capped_at_takts_limit_with_a_note() -> None:
    (item,) = eventbridge.load(
        json.dumps(_schedule(Target={"RetryPolicy": {"MaximumRetryAttempts": 185}})), NOW
    )
    assert item.body is not None
    assert item.body["retry"] == {"max_attempts": 100}
    assert item.notes


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"ScheduleExpression": "cron(0 8 ? * 6#3 *)"}, "first weekday"),
        ({"Target": {"Arn": "arn:aws:scheduler:::aws-sdk:sqs:sendMessage"}}, "universal"),
        ({"Target": {"Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/c"}}, "target"),
        ({"ScheduleExpression": "rate(0 minutes)"}, "rate"),
        ({"ScheduleExpressionTimezone": "Mars/Olympus"}, "time zone"),
    ],
)
def test_what_takt_cannot_say_is_refused(fields: dict[str, Any], words: str) -> None:
    (item,) = eventbridge.load(json.dumps(_schedule(**fields)), NOW)
    assert item.body is None
    assert words in (item.reason or "")


def test_a_list_schedules_summary_is_refused_with_a_pointer_to_get_schedule() -> None:
    summary = {
        "Schedules": [{"Name": "x", "GroupName": "g", "State": "ENABLED", "Target": {"Arn": QUEUE}}]
    }
    (item,) = eventbridge.load(json.dumps(summary), NOW)
    assert "get-schedule" in (item.reason or "")
    assert item.key == "import:eventbridge:g/x"


def test_a_file_that_is_no_schedule_raises() -> None:
    with pytest.raises(MappingError):
        eventbridge.load('{"foo": 1}', NOW)


def _job(**fields: Any) -> dict[str, Any]:
    return {
        "id": "job_1",
        "name": "sync",
        "status": "paused",
        "schedule": "0 9 * * mon-fri",
        "interval": None,
        "run_at": None,
        "time_zone": "Europe/London",
        "jitter": "15m",
        "start_at": None,
        "end_at": None,
        "target": QUEUE,
        "payload": {"task": "sync"},
        "retry": {"max_attempts": 3},
        "catchup": "all",
        "catchup_window": "1h",
        "overlap": "allow",
        "calendars": None,
        **fields,
    }


def test_a_job_exports_as_a_schedule_that_imports_as_the_same_job() -> None:
    exported = eventbridge.export(_job(), "arn:aws:iam::123456789012:role/s")
    assert exported.item is not None
    assert exported.item["ScheduleExpression"] == "cron(0 9 ? * 2,3,4,5,6 *)"
    assert exported.item["FlexibleTimeWindow"] == {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15}
    (again,) = eventbridge.load(json.dumps(exported.item), NOW)
    assert again.body is not None
    assert {
        k: again.body[k]
        for k in ("time_zone", "status", "jitter", "target", "payload", "retry", "catchup_window")
    } == {
        "time_zone": "Europe/London",
        "status": "paused",
        "jitter": "15m",
        "target": QUEUE,
        "payload": {"task": "sync"},
        "retry": {"max_attempts": 3},
        "catchup_window": "3600s",
    }


@pytest.mark.parametrize(
    ("fields", "expression"),
    [
        ({"schedule": None, "interval": "90m"}, "rate(90 minutes)"),
        ({"schedule": None, "interval": "1d"}, "rate(1 day)"),
        (
            {"schedule": None, "run_at": "2026-12-24T09:00:00Z", "time_zone": "Asia/Tokyo"},
            "at(2026-12-24T18:00:00)",
        ),
    ],
)
def test_intervals_and_one_offs_export(fields: dict[str, Any], expression: str) -> None:
    exported = eventbridge.export(_job(**fields), None)
    assert exported.item is not None
    assert exported.item["ScheduleExpression"] == expression


@pytest.mark.parametrize(
    "fields",
    [
        {"target": "https://svc.example/hook"},
        {"schedule": None, "interval": "90s"},
        {"schedule": "0 0 13 * fri"},
    ],
)
def test_what_eventbridge_cannot_say_is_not_exported(fields: dict[str, Any]) -> None:
    assert eventbridge.export(_job(**fields), None).reason
