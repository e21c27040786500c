"""A CronJob imports to a job that fires when Kubernetes' own cron does.

The held-out vectors (tests/data/migrate/robfig/vectors.jsonl) are the answers of the real
robfig/cron v3.0.1, the library Kubernetes' CronJob controller uses, written by
tests/data/migrate/robfig/generate.py: the next five instants of 101 schedules from instants
around the clock changes of Berlin, New York, Lord Howe and Troll, and robfig's refusals. takt's
Kubernetes import must give every one of them, or refuse the CronJob with its reason; no Go is
needed here.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from takt.schedule import CronSchedule, DstPolicy, preview
from takt_cli.migrate import Imported, k8s, robfig

VECTORS = Path(__file__).parents[2] / "data" / "migrate" / "robfig" / "vectors.jsonl"
TARGET = "https://runner.example/run"
CHANGE_DAY = robfig.CHANGE_DAY


def _vectors() -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for line in VECTORS.read_text(encoding="utf-8").splitlines():
        vector = json.loads(line)
        groups[(vector["spec"], vector["tz"])].append(vector)
    return dict(groups)


GROUPS = _vectors()


@cache
def _imported(schedule: str, zone: str) -> Imported:
    manifest = {
        "kind": "CronJob",
        "metadata": {"name": "report"},
        "spec": {
            "schedule": schedule,
            "timeZone": zone,
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"image": "r:1"}]}}}},
        },
    }
    return k8s.imported_manifest(manifest, 0, TARGET)


def _fires(body: dict[str, Any], start: str, count: int) -> list[str]:
    schedule = CronSchedule(body["schedule"], body["time_zone"], DstPolicy(**body["dst"]))
    after = datetime.fromisoformat(start)
    return [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in preview(schedule, after, count)]


def test_k8s_import_fires_at_robfigs_instants_or_refuses_with_the_reason() -> None:
    """Rule: a CronJob imports to a job that fires when robfig/cron fires it, or is refused."""
    disagreements = []
    for (schedule, zone), vectors in GROUPS.items():
        item = _imported(schedule, zone)
        if "error" in vectors[0]:
            assert item.body is None, f"robfig refuses {schedule!r}; takt imported it: {item.body}"
            assert "Kubernetes refuses it" in (item.reason or ""), item.reason
            continue
        if item.body is None:
            assert CHANGE_DAY in (item.reason or ""), f"{schedule!r} in {zone}: {item.reason}"
            continue
        for vector in vectors:
            fired = _fires(item.body, vector["from"], len(vector["next"]))
            if fired != vector["next"]:
                disagreements.append((schedule, zone, item.body["schedule"], vector["from"]))
    assert not disagreements, f"imported CronJobs fire where robfig/cron does not: {disagreements}"


def test_the_vectors_compare_across_every_zones_clock_changes() -> None:
    """The comparison is not empty where it matters: each zone, Lord Howe's half-hour changes
    and Troll's two-hour ones included, has many robfig answers an imported job was compared
    with."""
    compared: dict[str, int] = defaultdict(int)
    for (schedule, zone), vectors in GROUPS.items():
        if "error" not in vectors[0] and _imported(schedule, zone).body is not None:
            compared[zone] += len(vectors)
    assert min(compared.values()) >= 250, compared
    assert set(compared) == {
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "Antarctica/Troll",
    }


def _schedule(text: str, zone: str = "UTC") -> str:
    item = _imported(text, zone)
    assert item.body is not None, item.reason
    return str(item.body["schedule"])


def test_a_star_step_day_beside_a_weekday_is_ored_as_robfig_reads_it() -> None:
    """Rule: robfig's `*/2` is restricted, so `0 6 */2 * 1` is odd days OR Mondays."""
    body = _imported("0 6 */2 * 1", "Europe/Berlin").body
    assert body is not None
    fired = _fires(body, "2027-03-01T00:00:00Z", 5)
    assert fired == [
        "2027-03-01T05:00:00Z",  # Monday the 1st
        "2027-03-03T05:00:00Z",
        "2027-03-05T05:00:00Z",
        "2027-03-07T05:00:00Z",
        "2027-03-08T05:00:00Z",  # Monday the 8th: OR, as robfig reads it
    ], "robfig ORs a '*/2' day of month with a day of week"


def test_a_star_item_after_the_first_ands_the_day_fields() -> None:
    """Rule: robfig ANDs the day fields when an item of either is `*`: `1,*` is every day."""
    assert _schedule("0 6 1,* * 1") == "0 6 * * 1", "robfig ANDs a day field with a '*' item"


def test_a_weekday_step_from_a_value_stops_at_saturday() -> None:
    """Rule: robfig's day-of-week `N/step` runs to 6, so `5/2` is Fridays only (takt's to 7)."""
    assert _schedule("0 9 * * 5/2") == "0 9 * * 5", "robfig's '5/2' weekdays are Fridays only"


@pytest.mark.parametrize(
    ("schedule", "why"),
    [
        ("0 0 * * 7", "outside the day-of-week range 0-6"),
        ("0 0 * * fri-sun", "runs backwards"),
        ("0 22 L * *", "'L' is not a day-of-month value"),
        ("@Daily", "in lower case"),
        ("0 0 * * monday", "'monday' is not a day-of-week value"),
    ],
)
def test_what_robfig_refuses_is_refused_with_its_reason(schedule: str, why: str) -> None:
    """Rule: a schedule Kubernetes would refuse cannot exist, so the import refuses it too."""
    item = _imported(schedule, "UTC")
    assert item.body is None
    assert "Kubernetes refuses it" in (item.reason or "") and why in (item.reason or ""), (
        item.reason
    )


def test_chosen_hours_where_the_clock_changes_by_half_an_hour_are_refused() -> None:
    """Rule: robfig's hour walk misses Lord Howe's change days; takt cannot say that, so it
    refuses (robfig's own answer: no 03:00 on 4 October 2026, the day the clock goes forward)."""
    (vector,) = [
        v
        for v in GROUPS[("0 3 * * *", "Australia/Lord_Howe")]
        if v["from"] == "2026-10-03T15:29:00Z"
    ]
    assert vector["next"][0] == "2026-10-04T16:00:00Z", "robfig skips 3:00 on 4 October"
    item = _imported("0 3 * * *", "Australia/Lord_Howe")
    assert item.body is None
    assert CHANGE_DAY in (item.reason or ""), item.reason


def test_chosen_hours_where_the_clock_repeats_two_hours_are_refused() -> None:
    """Rule: Troll's clock goes back two hours; robfig's walk jumps to the second 2:00 and misses
    the second 1:00 (its own answer), which takt cannot say, so the import refuses."""
    (vector,) = [
        v for v in GROUPS[("0 1 * * *", "Antarctica/Troll")] if v["from"] == "2026-10-25T00:59:00Z"
    ]
    assert vector["next"][0] == "2026-10-26T01:00:00Z", "robfig misses 1:00 after 2:59 (+02)"
    item = _imported("0 1 * * *", "Antarctica/Troll")
    assert item.body is None
    assert "changes by 2 hours" in (item.reason or "") and CHANGE_DAY in (item.reason or "")


def test_chosen_hours_that_never_run_on_a_change_day_import_in_lord_howe() -> None:
    """Lord Howe's clock changes on Sundays, so a weekday schedule walks whole hours."""
    assert _schedule("0 9 * * 1-5", "Australia/Lord_Howe") == "0 9 * * 1-5"


def test_every_hour_imports_in_lord_howe() -> None:
    assert _schedule("*/15 * * * *", "Australia/Lord_Howe") == "*/15 * * * *"


def test_takt_writes_robfigs_values_as_it_reads_them() -> None:
    """An explicit list where takt would read the text otherwise; the text where it would not."""
    assert robfig.to_takt("0 6 1,,15 * 1-5", "UTC") == "0 6 1,15 * 1-5"
    assert robfig.to_takt("0 6 */10 * mon", "UTC") == "0 6 1-31/10 * mon"
    assert robfig.to_takt("*/1 ?-5 * * *", "UTC") == "*/1 * * * *"


def test_the_docs_count_the_vectors_as_the_file_holds_them() -> None:
    """docs/SCHEDULES.md's figures for the robfig vectors are the file's."""
    docs = (Path(__file__).parents[3] / "docs" / "SCHEDULES.md").read_text(encoding="utf-8")
    schedules = {schedule for schedule, _ in GROUPS}
    vectors = sum(len(group) for group in GROUPS.values())
    assert f"{vectors:,} next-five\ninstants of {len(schedules)} schedules" in docs, (
        vectors,
        len(schedules),
    )


def _exported_schedule(schedule: str) -> tuple[str | None, str | None]:
    job = {
        "id": "job_1",
        "name": "report",
        "status": "active",
        "schedule": schedule,
        "time_zone": "UTC",
        "overlap": "allow",
        "retry": {"max_attempts": 1},
        "timeout_sec": 60,
        "payload": {"name": "r", "image": "r:1"},
    }
    exported = k8s.export(job)
    return (None if exported.item is None else exported.item["spec"]["schedule"]), exported.reason


@pytest.mark.parametrize(
    ("takt", "kubernetes"),
    [
        ("0 9 * * 5/2", "0 9 * * 0,5"),  # takt's 5/2 is Friday and Sunday
        ("0 0 * * 7", "0 0 * * 0"),
        ("0 0 * * mon-sun", "0 0 * * *"),
        ("0 6 1,*/2 * 1", "0 6 1,*/2 * 1"),  # both OR it
        ("0 6 */2 * *", "0 6 */2 * *"),  # both AND it with every weekday
        ("0 6 13 * 1/2", "0 6 13 * 0,1,3,5"),  # both OR; takt's 1/2 reaches Sunday (7)
        ("@Daily", "@daily"),
    ],
)
def test_a_job_exports_as_a_cronjob_robfig_reads_the_same(takt: str, kubernetes: str) -> None:
    """Rule: an exported CronJob fires when the job does: written for robfig's reading."""
    schedule, reason = _exported_schedule(takt)
    assert schedule == kubernetes, reason
    again = robfig.to_takt(kubernetes, "UTC")
    start = "2027-01-01T00:00:00+00:00"
    assert _fires({"schedule": again, "time_zone": "UTC", "dst": {}}, start, 30) == _fires(
        {"schedule": takt, "time_zone": "UTC", "dst": {}}, start, 30
    ), "the exported CronJob, imported again, fires as the job did"


def test_a_job_that_ands_two_restricted_day_fields_is_not_exported() -> None:
    """takt's `0 6 */2 * 1` is odd Mondays; robfig cannot AND two restricted day fields."""
    schedule, reason = _exported_schedule("0 6 */2 * 1")
    assert schedule is None
    assert "ANDs two day fields only when one of them is '*'" in (reason or ""), reason


def test_a_job_kubernetes_would_run_otherwise_on_a_change_day_exports_with_a_note() -> None:
    job = {
        "id": "job_1",
        "name": "report",
        "status": "active",
        "schedule": "0 9 * * *",
        "time_zone": "Australia/Lord_Howe",
        "overlap": "allow",
        "retry": {"max_attempts": 1},
        "timeout_sec": 60,
        "payload": {"name": "r", "image": "r:1"},
    }
    exported = k8s.export(job)
    assert exported.item is not None, exported.reason
    assert any(CHANGE_DAY in note for note in exported.notes), exported.notes
