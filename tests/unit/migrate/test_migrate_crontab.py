"""A crontab to job bodies: zones, variables, comments and macros."""

from __future__ import annotations

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
        "name": "/usr/local/bin/backup --full",
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
    """Job names are unique in a tenant: the second line would be refused under the same name."""
    text = "0 5 * * * /bin/backup\nCRON_TZ=Europe/Berlin\n30 2 * * 0 /bin/backup\n0 6 * * * b\n"
    names = [i.body and i.body["name"] for i in crontab.load(text, TARGET)]
    assert names == [
        "/bin/backup [0 5 * * *, UTC]",
        "/bin/backup [30 2 * * 0, Europe/Berlin]",
        "b",
    ]
