"""EventBridge Scheduler schedules to job bodies, and jobs back to schedules.

The input is what `aws scheduler get-schedule` prints (one schedule) or a `{"Schedules": [...]}`
list of them. `list-schedules` prints summaries without the expression; those are refused with a
pointer to `get-schedule`. The mapping, field by field:

| EventBridge | takt |
|---|---|
| `cron(...)` | `schedule` (takt_cli/migrate/awscron.py), a year field as `start_at`/`end_at` |
| `rate(n minutes|hours|days)` | `interval` (`StartDate` anchors it) |
| `at(yyyy-mm-ddThh:mm:ss)` | `run_at` in `ScheduleExpressionTimezone` (a past one is refused) |
| `ScheduleExpressionTimezone` | `time_zone` |
| `State: DISABLED` | `status: paused` |
| `FlexibleTimeWindow` `MaximumWindowInMinutes` | `jitter` |
| `StartDate`, `EndDate` | `start_at`, `end_at` |
| `Target.Arn` | `target` (SQS, SNS, EventBridge bus, and what else takt's targets accept) |
| `Target.Input` | `payload` (parsed when it is JSON, else the text) |
| `RetryPolicy.MaximumRetryAttempts` | `retry.max_attempts` = attempts + 1 (at most 100) |
| `RetryPolicy.MaximumEventAgeInSeconds` | `catchup: all` within `catchup_window` |
| `DeadLetterConfig` | a note: takt keeps dead executions in its history |
| (EventBridge's clock changes, for `cron`) | `dst: {gap: skip, overlap: once}` |

EventBridge Scheduler skips a cron time that spring-forward skips and runs a time that fall-back
repeats once; the job's `dst` policy says the same, so it fires at the schedule's instants across
clock changes too.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from takt.models.records import Dst
from takt.schedule import ScheduleError, parse_duration, validate_time_zone
from takt.schedule.cron import parse_expression
from takt_cli.migrate.awscron import from_aws, to_aws
from takt_cli.migrate.model import (
    Exported,
    Imported,
    MappingError,
    checked,
    source_key,
    uncarried,
)
from takt_cli.migrate.reading import check_json_depth

_EXPRESSION = re.compile(r"(?P<kind>cron|rate|at)\((?P<body>.*)\)", re.DOTALL)
_RATE = re.compile(r"(?P<value>[0-9]+)\s+(?P<unit>minutes?|hours?|days?)")
_RATE_UNITS = {"minute": "m", "hour": "h", "day": "d"}
_AT = "%Y-%m-%dT%H:%M:%S"
MAX_ATTEMPTS = 100
AWS_MAX_RETRIES = 185
AWS_MAX_WINDOW_MINUTES = 1440
AWS_EVENT_AGE = (60, 86400)
# The job's choices are the model's (pydantic holds them to Dst).
AWS_DST = Dst(gap="skip", overlap="once").model_dump()
_NAME = re.compile(r"[^0-9A-Za-z_.-]+")


def load(text: str, now: datetime) -> list[Imported]:
    """Every schedule in `text` (JSON), mapped; a file that is not such JSON raises."""
    check_json_depth(text, "the file")
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise MappingError(f"not JSON: {exc}") from None
    if isinstance(document, dict) and isinstance(document.get("Schedules"), list):
        schedules = document["Schedules"]
    elif isinstance(document, dict) and "Name" in document:
        schedules = [document]
    elif isinstance(document, list):
        schedules = document
    else:
        raise MappingError('expected a schedule (get-schedule) or {"Schedules": [...]}')
    return [imported_schedule(schedule, index, now) for index, schedule in enumerate(schedules)]


def imported_schedule(schedule: Any, index: int, now: datetime) -> Imported:
    """One schedule as a job body, or refused with the reason."""
    if not isinstance(schedule, dict):
        return Imported(
            f"schedule {index}", source_key("eventbridge", str(index)), reason="not an object"
        )
    group = str(schedule.get("GroupName") or "default")
    name = str(schedule.get("Name") or f"schedule-{index}")
    item = Imported(f"{group}/{name}", source_key("eventbridge", f"{group}/{name}"))
    try:
        item.body = _body(schedule, group, name, now, item.notes)
    except (ValueError, OverflowError) as exc:
        # A MappingError, or a value out of any range (`cron(0 0 1 1 ? 9999)` ends in year
        # 10000): this schedule is refused, the rest of the file goes on.
        item.reason = str(exc)
        return item
    return checked(item)


def _body(
    schedule: dict[str, Any], group: str, name: str, now: datetime, notes: list[str]
) -> dict[str, Any]:
    expression = schedule.get("ScheduleExpression")
    if not isinstance(expression, str):
        raise MappingError(
            "no ScheduleExpression (list-schedules prints summaries only: export each schedule "
            "with aws scheduler get-schedule)"
        )
    tz = str(schedule.get("ScheduleExpressionTimezone") or "UTC")
    body: dict[str, Any] = {
        "name": name if group == "default" else f"{group}/{name}",
        "time_zone": tz,
    }
    start = _instant(schedule.get("StartDate"), "StartDate")
    end = _instant(schedule.get("EndDate"), "EndDate")
    body.update(_expression(expression, tz, now))
    if start is not None:
        body["start_at"] = max(start, _parsed(body.get("start_at")) or start).isoformat()
    if end is not None:
        body["end_at"] = min(end, _parsed(body.get("end_at")) or end).isoformat()
    if schedule.get("State") == "DISABLED":
        body["status"] = "paused"
    window = schedule.get("FlexibleTimeWindow") or {}
    if window.get("Mode") == "FLEXIBLE":
        minutes = int(window.get("MaximumWindowInMinutes") or 0)
        if minutes > 0:
            body["jitter"] = f"{minutes}m"
    target = schedule.get("Target")
    if not isinstance(target, dict) or not isinstance(target.get("Arn"), str):
        raise MappingError("no Target.Arn")
    body.update(_target(target, notes))
    return body


def _expression(expression: str, tz: str, now: datetime) -> dict[str, Any]:
    found = _EXPRESSION.fullmatch(expression.strip())
    if found is None:
        raise MappingError(f"{expression!r} is not a cron(...), rate(...) or at(...) expression")
    kind, text = found.group("kind"), found.group("body").strip()
    if kind == "cron":
        cron = from_aws(text)
        start, end = cron.window(_zone_name(tz))
        body: dict[str, Any] = {"schedule": cron.expr, "dst": dict(AWS_DST)}
        if start is not None and end is not None:
            body.update(start_at=start.isoformat(), end_at=end.isoformat())
        return body
    if kind == "rate":
        return {"interval": _interval(text)}
    try:
        local = datetime.strptime(text, _AT)
    except ValueError:
        raise MappingError(f"at({text}): expected 'at(yyyy-mm-ddThh:mm:ss)'") from None
    run_at = local.replace(tzinfo=ZoneInfo(_zone_name(tz)))
    if run_at <= now:
        raise MappingError(f"at({text}) is in the past; takt would run it at once")
    return {"run_at": run_at.isoformat()}


def _interval(text: str) -> str:
    """takt's interval for AWS's `rate(text)`, held to AWS's rules: a positive whole number and
    a unit in the singular for 1 and in the plural above (`rate(1 minutes)` is refused)."""
    rate = _RATE.fullmatch(text)
    if rate is None or int(rate.group("value")) < 1:
        raise MappingError(f"rate({text}): expected 'rate(n minutes|hours|days)'")
    value, unit = int(rate.group("value")), rate.group("unit")
    singular = unit.rstrip("s")
    if (value == 1) != (unit == singular):
        raise MappingError(
            f"rate({text}): AWS takes the unit in the singular for 1 and in the plural above "
            f"('rate(1 {singular})', 'rate(2 {singular}s)')"
        )
    return f"{value}{_RATE_UNITS[singular]}"


def _zone_name(tz: str) -> str:

    try:
        return validate_time_zone(tz)
    except ScheduleError as exc:
        raise MappingError(f"ScheduleExpressionTimezone: {exc}") from None


def _target(target: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    arn = str(target["Arn"])
    if arn.startswith("arn:aws:scheduler:::aws-sdk:"):
        raise MappingError(f"universal target {arn} (an AWS API call) has no takt target")
    body: dict[str, Any] = {"target": arn}
    raw = target.get("Input")
    if isinstance(raw, str):
        check_json_depth(raw, "Target.Input")
        try:
            body["payload"] = json.loads(raw)
        except ValueError:
            body["payload"] = raw
    policy = target.get("RetryPolicy") or {}
    retries = policy.get("MaximumRetryAttempts")
    if isinstance(retries, int):
        if retries + 1 > MAX_ATTEMPTS:
            notes.append(f"MaximumRetryAttempts {retries} lowered to takt's {MAX_ATTEMPTS - 1}")
        body["retry"] = {"max_attempts": min(retries + 1, MAX_ATTEMPTS)}
    age = policy.get("MaximumEventAgeInSeconds")
    if isinstance(age, int):
        body["catchup"] = "all"
        body["catchup_window"] = f"{age}s"
    dead_letter = (target.get("DeadLetterConfig") or {}).get("Arn")
    if dead_letter:
        notes.append(
            f"DeadLetterConfig {dead_letter} is not used: takt keeps dead executions in its "
            "history (takt executions list --state dead) and the lane's dead-letter queue"
        )
    for key in ("SqsParameters", "EventBridgeParameters", "KinesisParameters", "EcsParameters"):
        if target.get(key):
            notes.append(f"Target.{key} is not carried over")
    return body


def _instant(value: Any, field: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, tz=UTC)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise MappingError(f"{field} {value!r} is not a date") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _parsed(value: Any) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


# What `_schedule` writes or notes itself; `uncarried` names any other setting a job has.
CARRIED = frozenset(
    {"name", "time_zone", "status", "schedule", "interval", "run_at", "run_late", "jitter"}
    | {"start_at", "end_at", "retry", "catchup", "catchup_window", "target", "payload"}
    | {"overlap", "calendars", "idempotency_key"}
)


def export(job: dict[str, Any], role_arn: str | None) -> Exported:
    """A job (as the API shows it) as the input of `aws scheduler create-schedule`."""
    out = Exported(job["id"])
    try:
        out.item = _schedule(job, role_arn, out.notes)
    except MappingError as exc:
        out.reason = str(exc)
    else:
        out.notes += uncarried(job, CARRIED)
    return out


def _schedule(job: dict[str, Any], role_arn: str | None, notes: list[str]) -> dict[str, Any]:
    target = job.get("target")
    if not target or not str(target).startswith("arn:"):
        raise MappingError(
            f"target {target!r}: EventBridge Scheduler targets an ARN (SQS, SNS, a bus, Lambda)"
        )
    tz = job["time_zone"]
    group, _, name = (job.get("name") or job["id"]).rpartition("/")
    schedule: dict[str, Any] = {
        **({"GroupName": _NAME.sub("-", group)[:64]} if group else {}),
        "Name": _NAME.sub("-", name)[:64],
        "ScheduleExpressionTimezone": tz,
        "State": "DISABLED" if job["status"] == "paused" else "ENABLED",
    }
    if job.get("schedule"):
        schedule["ScheduleExpression"] = f"cron({to_aws(job['schedule'])})"
    elif job.get("interval"):
        schedule["ScheduleExpression"] = _rate(job["interval"])
        notes.append("a rate schedule starts when it is created, not at the job's anchor")
    else:
        local = datetime.fromisoformat(job["run_at"].replace("Z", "+00:00"))
        schedule["ScheduleExpression"] = f"at({local.astimezone(ZoneInfo(tz)).strftime(_AT)})"
    if job.get("jitter"):
        minutes = math.ceil(parse_duration(job["jitter"]) / timedelta(minutes=1))
        schedule["FlexibleTimeWindow"] = {
            "Mode": "FLEXIBLE",
            "MaximumWindowInMinutes": min(max(minutes, 1), AWS_MAX_WINDOW_MINUTES),
        }
    else:
        schedule["FlexibleTimeWindow"] = {"Mode": "OFF"}
    if job.get("start_at"):
        schedule["StartDate"] = job["start_at"]
    if job.get("end_at"):
        schedule["EndDate"] = job["end_at"]
    retries = min(int(job["retry"]["max_attempts"]) - 1, AWS_MAX_RETRIES)
    policy: dict[str, Any] = {"MaximumRetryAttempts": retries}
    if job.get("catchup") == "all":
        age = int(parse_duration(job["catchup_window"]).total_seconds())
        policy["MaximumEventAgeInSeconds"] = min(max(age, AWS_EVENT_AGE[0]), AWS_EVENT_AGE[1])
    schedule["Target"] = {
        "Arn": target,
        "Input": json.dumps(job.get("payload")),
        "RetryPolicy": policy,
        **({"RoleArn": role_arn} if role_arn else {}),
    }
    if job.get("overlap") not in (None, "allow"):
        notes.append(f"overlap={job['overlap']} has no EventBridge equivalent")
    if job.get("calendars"):
        notes.append("calendars have no EventBridge equivalent")
    if job.get("schedule") and parse_expression(job["schedule"]).follows_clock:
        notes.append(
            "its minute or hour starts with '*', so takt runs a time that fall-back repeats at "
            "both passes; EventBridge runs it once"
        )
    elif job.get("schedule") and (job.get("dst") or AWS_DST) != AWS_DST:
        notes.append(
            "EventBridge skips a time that spring-forward skips and runs a repeated time once "
            f"(dst {AWS_DST}), not as the job's dst {job['dst']}"
        )
    return schedule


def _rate(interval: str) -> str:
    every = parse_duration(interval)
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        count, rest = divmod(every.total_seconds(), size)
        if rest == 0 and count >= 1:
            value = int(count)
            return f"rate({value} {unit if value != 1 else unit[:-1]})"
    raise MappingError(f"interval {interval!r}: EventBridge rates are whole minutes")
