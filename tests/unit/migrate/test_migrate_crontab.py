"""A crontab to job bodies: zones, variables, comments and macros."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from takt.schedule import CronSchedule, DstPolicy, preview
from takt_cli.migrate import crontab

TARGET = "handler:shell"

CRONTAB = """\
# m h dom mon dow command
MAILTO=ops@example.com
0 5 * * 1 /usr/local/bin/backup --full

CRON_TZ=Europe/Berlin
*/10 9-17 * * mon-fri  curl -s https://svc.example/ping
@daily /usr/bin/rotate-logs
TZ="America/New_York"
@reboot /usr/bin/start-agent
30 2 * * * echo "100%" > /tmp/x
15 * * *
"""


def test_each_command_line_is_a_job_for_the_target() -> None:
    items = crontab.load(CRONTAB, TARGET)

    assert [i.source for i in items] == [
        "line 3",
        "line 6",
        "line 7",
        "line 9",
        "line 10",
        "line 11",
    ]
    bodies = [i.body for i in items]
    assert bodies[0] == {
        "name": "backup",
        "schedule": "0 5 * * 1",
        "time_zone": "UTC",
        "target": TARGET,
        "payload": {
            "command": "/usr/local/bin/backup --full",
            "env": {"MAILTO": "ops@example.com"},
        },
    }
    assert bodies[1] is not None
    assert (bodies[1]["schedule"], bodies[1]["time_zone"]) == (
        "*/10 9-17 * * mon-fri",
        "Europe/Berlin",
    )
    assert bodies[2] is not None
    assert (bodies[2]["schedule"], bodies[2]["time_zone"]) == ("@daily", "Europe/Berlin")
    assert bodies[4] is not None
    assert bodies[4]["time_zone"] == "America/New_York"
    assert bodies[4]["payload"] == {
        "command": 'echo "100%" > /tmp/x',
        "env": {"MAILTO": "ops@example.com"},
    }


def test_reboot_and_a_line_without_a_command_are_refused() -> None:
    items = crontab.load(CRONTAB, TARGET)
    assert items[3].reason == "@reboot has no time to schedule", (
        "a crontab @reboot line is refused with its own reason"
    )
    assert "no command" in (items[5].reason or "")


def test_a_percent_sign_is_noted() -> None:
    assert any("%" in note for note in crontab.load(CRONTAB, TARGET)[4].notes)


def test_keys_follow_the_line_not_its_position() -> None:
    first = crontab.load("0 5 * * * a\n0 6 * * * b\n", TARGET)
    moved = crontab.load("# header\n0 6 * * * b\n0 5 * * * a\n", TARGET)
    assert {i.key for i in first} == {i.key for i in moved}
    assert first[0].key != first[1].key


def test_an_expression_takt_refuses_is_refused_with_its_reason() -> None:
    (item,) = crontab.load("0 0 30 2 * never\n", TARGET)
    assert item.body is None
    assert "never" in (item.reason or "") or "30" in (item.reason or "")


def test_a_command_on_several_lines_gets_a_name_per_line() -> None:
    """Rule: job names are unique in a tenant, so colliding short names get their schedule, and
    then a hash of their line, appended."""
    text = (
        "0 5 * * * /bin/backup\nCRON_TZ=Europe/Berlin\n30 2 * * 0 /bin/backup\n0 6 * * * b\n"
        "0 7 * * * /opt/backup --a\n0 7 * * * /opt/backup --b\n"
    )
    names = [i.body and i.body["name"] for i in crontab.load(text, TARGET)]
    assert names[:3] == ["backup [0 5 * * *, UTC]", "backup [30 2 * * 0, Europe/Berlin]", "b"]
    assert names[3] != names[4], "two lines, one schedule: still two names"
    assert all(str(name).startswith("backup [0 7 * * *, Europe/Berlin] #") for name in names[3:])
    assert names == [i.body and i.body["name"] for i in crontab.load(text, TARGET)]


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("/usr/bin/rotate   # nightly, keep 7", "rotate"),
        ("/usr/bin/python3 /opt/jobs/report.py --daily", "python3 report.py"),
        ("cd /srv/app && make backup >/dev/null 2>&1", "make"),
        ("LANG=C /usr/bin/sort -u /var/x > /var/y", "sort"),
        ("sh -c 'pg_dump shop | gzip > /b/shop.gz'", "pg_dump"),
        (
            "test -x /usr/sbin/anacron || ( cd / && run-parts --report /etc/cron.daily )",
            "run-parts cron.daily",
        ),
        ("/usr/bin/php /var/www/artisan schedule:run >> /dev/null 2>&1", "php artisan"),
        ("\u202e/usr/bin/evil", "evil"),
    ],
)
def test_a_job_is_named_after_what_its_command_runs(command: str, name: str) -> None:
    """Rule: a short name from the command (no paths, arguments, comments or controls), not the
    whole line."""
    (item,) = crontab.load(f"0 5 * * * {command}\n", TARGET)
    assert item.body is not None, item.reason
    assert item.body["name"] == name, "named after the program, not the whole line"
    assert item.body["payload"]["command"] == command


def test_a_system_crontab_leaves_the_user_out_of_the_command_and_notes_it() -> None:
    """Rule: in /etc/crontab the word after the schedule is the user, not the command."""
    line = "17 * * * * root /usr/bin/rotate   # system crontab style with user\n"
    (item,) = crontab.load(line, TARGET, system=True)
    assert item.body is not None, item.reason
    assert item.body["name"] == "rotate", "a system crontab's user is not the job's name"
    assert item.body["payload"]["command"] == "/usr/bin/rotate   # system crontab style with user"
    assert any("'root'" in note for note in item.notes), item.notes


def test_a_user_field_in_a_user_crontab_is_pointed_at_system() -> None:
    (item,) = crontab.load("17 * * * * root /usr/bin/rotate\n", TARGET)
    assert item.body is not None and item.body["name"] == "root"
    assert any("--system" in note for note in item.notes), item.notes


def test_a_system_line_without_a_command_after_the_user_is_refused() -> None:
    (item,) = crontab.load("17 * * * * root\n", TARGET, system=True)
    assert item.body is None
    assert "no command after the schedule and the user" in (item.reason or "")


CRON_VECTORS = Path(__file__).parents[2] / "data" / "cron" / "vectors.jsonl"


def _vixie_vectors() -> list[dict[str, Any]]:
    """crondst's vectors (lawcal/crondst, copied with their README into tests/data/cron): what
    Vixie cron runs across clock changes, fixed-time and wildcard jobs alike."""
    vectors = [json.loads(line) for line in CRON_VECTORS.read_text(encoding="utf-8").splitlines()]
    return [
        v
        for v in vectors
        if v["dialect"] == "5field" and (v.get("dst") or {}).get("policy", "").startswith("vixie")
    ]


def test_a_crontab_line_runs_when_vixie_cron_runs_it_across_clock_changes() -> None:
    """Rule: a crontab imports with Vixie's meaning (day fields, DST): every crondst vector."""
    vectors = _vixie_vectors()
    assert len(vectors) >= 300, len(vectors)
    disagreements = []
    for vector in vectors:
        (item,) = crontab.load(f"CRON_TZ={vector['tz']}\n{vector['expr']} /bin/job\n", TARGET)
        assert item.body is not None, item.reason
        body = item.body
        schedule = CronSchedule(
            body["schedule"], body["time_zone"], DstPolicy(**body.get("dst", {}))
        )
        after = datetime.fromisoformat(vector["from"])
        fired = preview(schedule, after, len(vector["next"]))
        expected = [datetime.fromisoformat(t).astimezone(UTC) for t in vector["next"]]
        if fired != expected:
            disagreements.append((vector["expr"], vector["tz"], vector["from"]))
    assert not disagreements, f"crontab lines that Vixie cron runs otherwise: {disagreements}"


def test_the_day_fields_or_when_both_are_restricted_and_and_when_one_starts_with_a_star() -> None:
    """Rule: Vixie ORs `13` with `fri` and ANDs `*/2` with `sat`, and the import keeps both."""
    first, second = crontab.load("0 0 13 * fri /bin/a\n0 16 */2 * sat /bin/b\n", TARGET)
    assert first.body is not None and second.body is not None
    after = datetime(2026, 11, 1, tzinfo=UTC)
    ored = [t.day for t in preview(CronSchedule(first.body["schedule"], "UTC"), after, 4)]
    anded = [t.day for t in preview(CronSchedule(second.body["schedule"], "UTC"), after, 3)]
    assert ored == [6, 13, 20, 27], "Vixie ORs two restricted day fields (13th, Fridays)"
    assert anded == [7, 21, 5], "Vixie ANDs a '*/2' day with Saturdays (odd-day Saturdays)"
