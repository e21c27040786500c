"""The issue's held-out check, run as a user would: the installed `takt` imports hand-written
sample files (tests/data/migrate) with `-o json ... --dry-run`, and the job bodies it prints must
fire at the sources' instants (by `takt schedule preview` and by oracles written here from the
sources' own rules, never from takt's code), keep zone, suspension, overlap rule, payload, target
and retry count, and turn a 15-minute flexible window into a 15-minute jitter.

The oracles walk real time minute by minute and read each minute on the zone's wall clock, as
the sources do: robfig/cron (Kubernetes) walks a fixed time in real time, so a time skipped by
spring-forward never comes and a repeated one comes twice; EventBridge Scheduler documents that
it skips the first and runs the second once. The windows cross the 2027 clock changes of
Europe/Berlin and America/New_York.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

DATA = Path(__file__).parents[2] / "data" / "migrate"
TAKT = str(Path(sys.executable).parent / "takt")
TARGET = "https://runner.example/run"
NOWHERE = "http://127.0.0.1:9"  # a dry run must not call the API: nothing listens here
MINUTE = timedelta(minutes=1)
# Ten-day windows around New Year and the 2027 clock changes (New York 14 March and 7 November,
# Berlin 28 March and 31 October), each holding a month's last day and a month's first Monday.
WINDOWS = [
    (datetime(2026, 12, 28, tzinfo=UTC), datetime(2027, 1, 6, tzinfo=UTC)),
    (datetime(2027, 3, 10, tzinfo=UTC), datetime(2027, 3, 16, tzinfo=UTC)),
    (datetime(2027, 3, 26, tzinfo=UTC), datetime(2027, 4, 6, tzinfo=UTC)),
    (datetime(2027, 10, 28, tzinfo=UTC), datetime(2027, 11, 9, tzinfo=UTC)),
]
# The windows in chunks of at most four days, so that 1000 instants cover every-15-minute jobs.
CHUNKS = [
    (start + k * timedelta(days=4), min(start + (k + 1) * timedelta(days=4), end))
    for start, end in WINDOWS
    for k in range(((end - start) + timedelta(days=3)) // timedelta(days=4))
]
MONTHS = {
    name: number
    for number, name in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
ROBFIG_WEEKDAYS = {name: number for number, name in enumerate(DAYS)}
AWS_WEEKDAYS = {name: number for number, name in enumerate(DAYS, 1)}


def _takt(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TAKT, *args], input=stdin, capture_output=True, text=True, check=False, timeout=60
    )


def _dry_run(kind: str, file: str, *extra: str) -> tuple[dict[str, dict[str, Any]], str]:
    """The bodies a dry run prints, and its stderr; it exits 1 when it refused an item, as the
    import would."""
    done = _takt(
        "-o", "json", "--endpoint", NOWHERE, "import", kind, str(DATA / file), *extra, "--dry-run"
    )
    refused = "takt: refused: " in done.stderr
    assert done.returncode == (1 if refused else 0), done.stderr
    bodies = json.loads(done.stdout)
    assert isinstance(bodies, list)
    return {body["name"]: body for body in bodies}, done.stderr


def _preview(bodies: list[dict[str, Any]], oracles: list[list[datetime]]) -> list[list[datetime]]:
    """`takt schedule preview --batch` (one process): each body's instants in every chunk of the
    windows. Each chunk asks for one more instant than the oracle finds in it, so an extra
    instant inside the chunk shows as a difference."""
    lines = []
    for body, oracle in zip(bodies, oracles, strict=True):
        dst = body.get("dst") or {}
        floor = datetime.fromisoformat(body.get("start_at") or "2000-01-01T00:00:00+00:00")
        for start, end in CHUNKS:
            lines.append(
                {
                    "cron": body["schedule"],
                    "tz": body["time_zone"],
                    "after": (max(start, floor) - MINUTE).isoformat(),
                    "count": 1 + sum(start <= t < end for t in oracle),
                    "gap": dst.get("gap", "run"),
                    "overlap": dst.get("overlap", "once"),
                }
            )
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = _takt("schedule", "preview", "--batch", stdin=stdin)
    assert done.returncode == 0, done.stderr
    answers = iter(json.loads(line) for line in done.stdout.splitlines())
    found: list[list[datetime]] = []
    for body in bodies:
        instants: list[datetime] = []
        for (_, end), answer in zip(CHUNKS, answers, strict=False):
            parsed = [datetime.fromisoformat(text.replace("Z", "+00:00")) for text in answer]
            instants += [t for t in parsed if t < end]
        found.append(_within(instants, body))
    return found


def _within(instants: list[datetime], body: dict[str, Any]) -> list[datetime]:
    start = datetime.fromisoformat(body["start_at"]) if body.get("start_at") else None
    end = datetime.fromisoformat(body["end_at"]) if body.get("end_at") else None
    return [t for t in instants if (start is None or t >= start) and (end is None or t <= end)]


def _walk(zone: str, fires: Callable[[datetime], bool]) -> list[datetime]:
    """Every real minute of the windows whose wall-clock reading in `zone` `fires` says runs."""
    tz = ZoneInfo(zone)
    out = []
    for start, end in WINDOWS:
        t = start
        while t < end:
            if fires(t.astimezone(tz)):
                out.append(t)
            t += MINUTE
    return out


def _values(field: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """The values of a cron field and whether an item is `*` or `?` not stepped by more than 1
    (robfig's star bit: `*/2` is restricted)."""
    values: set[int] = set()
    star = False
    for item in field.lower().split(","):
        span, _, step = item.partition("/")
        if span in ("*", "?"):
            star, first, last = star or int(step or 1) == 1, low, high
        else:
            a, _, b = span.partition("-")
            first = names[a] if a in names else int(a)
            last = (names[b] if b in names else int(b)) if b else (high if step else first)
        values.update(range(first, last + 1, int(step or 1)))
    return values, star


def _robfig(expr: str) -> Callable[[datetime], bool]:
    """robfig/cron (Kubernetes): the day fields AND when an item of either is `*` or `?` not
    stepped by more than 1, else OR (`*/2` beside a weekday ORs); weekdays 0-6 from Sunday."""
    minute, hour, day, month, weekday = expr.split()
    minutes, hours = _values(minute, 0, 59, {})[0], _values(hour, 0, 23, {})[0]
    (days, day_star), months = _values(day, 1, 31, {}), _values(month, 1, 12, MONTHS)[0]
    weekdays, weekday_star = _values(weekday, 0, 6, ROBFIG_WEEKDAYS)

    def fires(local: datetime) -> bool:
        if local.minute not in minutes or local.hour not in hours:
            return False
        in_days = local.day in days
        in_weekdays = local.isoweekday() % 7 in weekdays
        day_ok = in_days and in_weekdays if day_star or weekday_star else in_days or in_weekdays
        return local.month in months and day_ok

    return fires


def _aws(expr: str) -> Callable[[datetime], bool]:
    """AWS's cron: weekdays 1-7 from Sunday, `L` the month's last day, `X#n` the nth X, a year
    field; run once at a repeated wall time (the second reading, fold=1, does not run)."""
    minute, hour, day, month, weekday, year = expr.split()
    minutes, hours = _values(minute, 0, 59, {})[0], _values(hour, 0, 23, {})[0]
    months = _values(month, 1, 12, MONTHS)[0]
    years = _values(year, 1970, 2199, {})[0]
    days = _values(day, 1, 31, {})[0] if day not in ("L", "?") else set()
    weekdays = _values(weekday, 1, 7, AWS_WEEKDAYS)[0] if "#" not in weekday else set()

    def day_ok(local: datetime) -> bool:
        aws_weekday = local.isoweekday() % 7 + 1
        if day == "L":
            return (local + timedelta(days=1)).month != local.month
        if day != "?":
            return local.day in days
        if "#" in weekday:
            which, nth = weekday.split("#")
            return aws_weekday == int(which) and (local.day - 1) // 7 + 1 == int(nth)
        return aws_weekday in weekdays

    def fires(local: datetime) -> bool:
        if local.minute not in minutes or local.hour not in hours:
            return False
        if local.fold == 1 and local.replace(fold=0).utcoffset() != local.utcoffset():
            return False
        return local.month in months and local.year in years and day_ok(local)

    return fires


# --- Kubernetes ------------------------------------------------------------------------------

K8S = {
    # name: (source schedule, zone, status, overlap, max_attempts, catch-up window, container)
    "hello": ("30 2 * * *", "Europe/Berlin", "active", "skip", 4, "200s", "hello"),
    "finance/report": ("30 1 * * *", "America/New_York", "paused", "replace", 1, None, "report"),
    "sunday-backup": ("0 2 * * 0", "America/New_York", "active", "allow", 7, None, "backup"),
    "cleanup": ("*/15 * * * *", "UTC", "active", "allow", 2, None, "cleanup"),
    "even-mondays": ("0 6 */2 * 1", "Europe/Berlin", "active", "allow", 7, None, "even"),
}


@pytest.fixture(scope="module")
def k8s() -> tuple[dict[str, dict[str, Any]], str]:
    return _dry_run("k8s", "cronjobs.yaml", "--target", TARGET)


def test_every_cronjob_and_nothing_else_becomes_a_body(
    k8s: tuple[dict[str, dict[str, Any]], str],
) -> None:
    bodies, stderr = k8s
    assert sorted(bodies) == sorted(K8S)
    assert "refused" not in stderr


@pytest.mark.parametrize("name", sorted(K8S))
def test_a_cronjob_keeps_zone_suspension_overlap_retries_target_and_payload(
    k8s: tuple[dict[str, dict[str, Any]], str], name: str
) -> None:
    _, zone, status, overlap, attempts, window, container = K8S[name]
    body = k8s[0][name]
    assert body["time_zone"] == zone
    assert body.get("status", "active") == status
    assert body["overlap"] == overlap
    assert body["retry"]["max_attempts"] == attempts
    assert body.get("catchup_window") == window
    assert body["target"] == TARGET
    assert body["payload"]["name"] == container


def test_the_container_with_command_args_and_env_is_the_payload(
    k8s: tuple[dict[str, dict[str, Any]], str],
) -> None:
    assert k8s[0]["hello"]["payload"] == {
        "name": "hello",
        "image": "busybox:1.28",
        "imagePullPolicy": "IfNotPresent",
        "command": ["/bin/sh", "-c"],
        "args": ["date; echo Hello from the Kubernetes cluster"],
        "env": [{"name": "GREETING", "value": "hi"}],
    }


def test_cronjobs_fire_at_the_instants_kubernetes_does_across_dst(
    k8s: tuple[dict[str, dict[str, Any]], str],
) -> None:
    names = sorted(K8S)
    oracles = [_walk(K8S[name][1], _robfig(K8S[name][0])) for name in names]
    previews = _preview([k8s[0][name] for name in names], oracles)
    for name, preview, oracle in zip(names, previews, oracles, strict=True):
        assert preview == oracle, name
        assert preview, name


def test_the_robfig_oracle_agrees_with_croniter_away_from_clock_changes() -> None:
    """The oracle itself is checked against croniter where no clock changes (croniter by default
    ORs the day fields unless one is `*`, as robfig does with `*/2`)."""
    for source, zone, *_ in K8S.values():
        tz = ZoneInfo(zone)
        start, end = WINDOWS[0]
        expected = []
        found = croniter(source, (start - MINUTE).astimezone(tz))
        for t in found.all_next(datetime):
            if t >= end:
                break
            expected.append(t.astimezone(UTC))
        assert [t for t in _walk(zone, _robfig(source)) if t < end] == expected, source


def test_the_robfig_oracle_sees_the_clock_changes() -> None:
    """Berlin's 02:30 does not come on 28 March 2027 and comes twice on 31 October."""
    fired = _walk("Europe/Berlin", _robfig("30 2 * * *"))
    days = [t.astimezone(ZoneInfo("Europe/Berlin")).date().isoformat() for t in fired]
    assert "2027-03-28" not in days
    assert days.count("2027-10-31") == 2


# --- EventBridge Scheduler -------------------------------------------------------------------

EVENTBRIDGE = {
    # name: (source cron, zone, status, jitter, target, payload, max_attempts)
    "nightly-sync": (
        "30 2 * * ? *",
        "Europe/Berlin",
        "active",
        "15m",
        "arn:aws:sqs:us-east-1:123456789012:sync-queue",
        {"job": "sync", "full": True},
        5,
    ),
    "billing/month-end": (
        "0 18 L * ? *",
        "America/New_York",
        "paused",
        None,
        "arn:aws:sns:us-east-1:123456789012:billing-close",
        {"kind": "close"},
        1,
    ),
    "first-monday": (
        "0 9 ? * 2#1 *",
        "Europe/Berlin",
        "active",
        "15m",
        "arn:aws:events:us-east-1:123456789012:event-bus/default",
        {"detail-type": "planning"},
        4,
    ),
    "sunday-early": (
        "30 1,2 ? * 1 *",
        "America/New_York",
        "active",
        None,
        "arn:aws:lambda:us-east-1:123456789012:function:rotate-keys",
        {"rotate": True},
        100,  # AWS's 185 retries, above takt's 99: lowered, with a note
    ),
    "sunday-quarters": (  # its hour is `*`: AWS still runs a repeated time once
        "0/15 * ? * 1 *",
        "America/New_York",
        "active",
        None,
        "arn:aws:sqs:us-east-1:123456789012:sunday-quarters",
        {"every": "15m"},
        2,
    ),
    "tokyo-2027": (
        "0/10 9-17 ? * MON-FRI 2027",
        "Asia/Tokyo",
        "active",
        None,
        "arn:aws:lambda:us-east-1:123456789012:function:poll",
        {"market": "jp"},
        3,
    ),
}


@pytest.fixture(scope="module")
def eventbridge() -> tuple[dict[str, dict[str, Any]], str]:
    single, single_err = _dry_run("eventbridge", "get-schedule.json")
    listed, listed_err = _dry_run("eventbridge", "schedules.json")
    return {**single, **listed}, single_err + listed_err


@pytest.mark.parametrize("name", sorted(EVENTBRIDGE))
def test_a_schedule_keeps_zone_state_window_target_payload_and_retries(
    eventbridge: tuple[dict[str, dict[str, Any]], str], name: str
) -> None:
    _, zone, status, jitter, target, payload, attempts = EVENTBRIDGE[name]
    body = eventbridge[0][name]
    assert body["time_zone"] == zone
    assert body.get("status", "active") == status
    assert body.get("jitter") == jitter
    assert body["target"] == target
    assert body["payload"] == payload
    assert body["retry"]["max_attempts"] == attempts


def test_get_schedules_dates_age_and_dead_letter_queue(
    eventbridge: tuple[dict[str, dict[str, Any]], str],
) -> None:
    bodies, stderr = eventbridge
    body = bodies["nightly-sync"]
    assert datetime.fromisoformat(body["start_at"]) == datetime(2026, 12, 5, tzinfo=UTC)
    assert datetime.fromisoformat(body["end_at"]) == datetime(2027, 12, 31, tzinfo=UTC)
    assert (body["catchup"], body["catchup_window"]) == ("all", "3600s")
    assert "sync-dlq" in stderr
    assert "SqsParameters" in stderr
    assert "185" in stderr


def test_cron_schedules_fire_at_the_instants_eventbridge_does_across_dst(
    eventbridge: tuple[dict[str, dict[str, Any]], str],
) -> None:
    names = sorted(EVENTBRIDGE)
    bodies = [eventbridge[0][name] for name in names]
    start_date = datetime(2026, 12, 5, tzinfo=UTC)  # nightly-sync's StartDate
    oracles = [
        [
            t
            for t in _walk(EVENTBRIDGE[name][1], _aws(EVENTBRIDGE[name][0]))
            if name != "nightly-sync" or t >= start_date
        ]
        for name in names
    ]
    previews = _preview(bodies, oracles)
    for name, preview, oracle in zip(names, previews, oracles, strict=True):
        assert preview == oracle, name
        assert preview, name


def test_the_aws_oracle_runs_a_repeated_time_once_when_the_hour_is_a_star() -> None:
    """Rule: EventBridge runs a time that fall-back repeats once, `*` hour or not (AWS: it "runs
    only once and doesn't repeat its invocation"): New York's 1:00-1:45 on 7 November 2027."""
    fired = _walk("America/New_York", _aws("0/15 * ? * 1 *"))
    local = [t.astimezone(ZoneInfo("America/New_York")) for t in fired]
    fall = [t.strftime("%H:%M") for t in local if t.date().isoformat() == "2027-11-07"]
    assert fall[4:9] == ["01:00", "01:15", "01:30", "01:45", "02:00"], fall
    assert len(fall) == 96, "a repeated quarter hour runs once: 96 runs on the 25-hour day"


def test_the_aws_oracle_skips_the_gap_and_runs_a_repeated_time_once() -> None:
    fired = _walk("America/New_York", _aws("30 1,2 ? * 1 *"))
    local = [t.astimezone(ZoneInfo("America/New_York")) for t in fired]
    spring = [t.strftime("%H:%M") for t in local if t.date().isoformat() == "2027-03-14"]
    fall = [t.strftime("%H:%M") for t in local if t.date().isoformat() == "2027-11-07"]
    assert (spring, fall) == (["01:30"], ["01:30", "02:30"])


def test_a_rate_an_at_and_what_takt_cannot_say(
    eventbridge: tuple[dict[str, dict[str, Any]], str],
) -> None:
    bodies, stderr = eventbridge
    rate = bodies["every-five"]
    assert (rate["interval"], rate["jitter"], rate["payload"]) == ("5m", "15m", "ping")
    assert datetime.fromisoformat(rate["start_at"]) == datetime(2026, 12, 5, tzinfo=UTC)
    launch = datetime.fromisoformat(bodies["launch"]["run_at"])
    assert launch == datetime(2099, 6, 1, 9, tzinfo=ZoneInfo("Europe/Berlin"))
    for refused, why in [
        ("nearest-weekday", "'W'"),
        ("last-friday", "'L' in the day of week"),
        ("second-tuesday", "'3#2'"),
        ("sdk-call", "universal target"),
    ]:
        assert refused not in bodies
        assert f"refused: default/{refused}: " in stderr
        assert why in stderr
