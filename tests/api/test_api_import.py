"""`takt import` and `takt export` through the CLI's own client against the real API: a dry run
creates nothing, an import creates each job once, and a re-import changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from takt.clock import ManualClock
from takt_cli.commands.main import main
from tests.api.harness import Api, store_snapshot
from tests.api.served import served

TARGET = "https://runner.example/run"
CRONJOBS = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: reports}
spec:
  schedule: "30 2 * * *"
  timeZone: America/New_York
  concurrencyPolicy: Replace
  suspend: true
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          containers: [{name: report, image: "example/report:1"}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: broken}
spec:
  schedule: "0 6 * * 7"
  jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}
"""
SCHEDULES = {
    "Schedules": [
        {
            "Name": "sync",
            "ScheduleExpression": "cron(0 9 ? * MON-FRI *)",
            "ScheduleExpressionTimezone": "Europe/London",
            "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15},
            "Target": {
                "Arn": "arn:aws:sqs:us-east-1:123456789012:jobs",
                "Input": '{"task": "sync"}',
                "RetryPolicy": {"MaximumRetryAttempts": 2},
            },
        }
    ]
}


@pytest.fixture
def endpoint(api: Api) -> Iterator[str]:
    with served(api) as url:
        yield url


def _run(capsys: pytest.CaptureFixture[str], endpoint: str, *args: str) -> tuple[int, str, str]:
    code = main(["--endpoint", endpoint, "-o", "json", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_dry_run_prints_the_bodies_and_creates_nothing(
    api: Api, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = store_snapshot(api.svc)
    file = _file(tmp_path, "cronjobs.yaml", CRONJOBS)

    code, out, err = _run(capsys, endpoint, "import", "k8s", file, "--target", TARGET, "--dry-run")

    assert code == 1, "a dry run exits as the import would: 1 when an item is refused"
    assert "1 of 2 refused" in err
    bodies = json.loads(out)
    assert [b["name"] for b in bodies] == ["reports/nightly"]
    assert (bodies[0]["overlap"], bodies[0]["status"]) == ("replace", "paused")
    assert "refused: default/broken" in err
    assert store_snapshot(api.svc) == before


def test_an_import_creates_each_job_once_and_a_reimport_changes_nothing(
    api: Api, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _file(tmp_path, "schedules.json", json.dumps(SCHEDULES))

    code, out, _ = _run(capsys, endpoint, "import", "eventbridge", file)
    first = json.loads(out)
    after_first = store_snapshot(api.svc)
    code_again, out_again, _ = _run(capsys, endpoint, "import", "eventbridge", file)

    assert (code, code_again) == (0, 0)
    assert [row["result"] for row in first] == ["created"]
    again = json.loads(out_again)
    assert [(row["result"], row["job_id"]) for row in again] == [("unchanged", first[0]["job_id"])]
    assert store_snapshot(api.svc) == after_first
    job = api.request("GET", f"/v1/jobs/{first[0]['job_id']}").json
    assert (job["schedule"], job["time_zone"], job["jitter"]) == (
        "0 9 * * MON-FRI",
        "Europe/London",
        "15m",
    )
    assert job["retry"]["max_attempts"] == 3


def test_a_changed_source_is_refused_and_the_import_exits_non_zero(
    endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _file(tmp_path, "schedules.json", json.dumps(SCHEDULES))
    _run(capsys, endpoint, "import", "eventbridge", file)
    changed: dict[str, Any] = json.loads(json.dumps(SCHEDULES))
    changed["Schedules"][0]["ScheduleExpression"] = "cron(0 10 ? * MON-FRI *)"
    _file(tmp_path, "schedules.json", json.dumps(changed))

    code, out, err = _run(capsys, endpoint, "import", "eventbridge", file)

    assert code == 1
    (row,) = json.loads(out)
    assert row["result"] == "refused"
    assert "differs from the source in schedule" in row["reason"]
    assert err.startswith("takt: error: 1 of 1 refused")


def test_export_writes_what_imports_back_to_the_same_instants(
    api: Api, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _file(tmp_path, "schedules.json", json.dumps(SCHEDULES))
    (row,) = json.loads(_run(capsys, endpoint, "import", "eventbridge", file)[1])

    code, out, _ = _run(capsys, endpoint, "export", "eventbridge", "--job", row["job_id"])

    assert code == 0
    (schedule,) = json.loads(out)["Schedules"]
    assert schedule["ScheduleExpression"] == "cron(0 9 ? * 2,3,4,5,6 *)"
    assert schedule["ScheduleExpressionTimezone"] == "Europe/London"
    assert schedule["FlexibleTimeWindow"]["MaximumWindowInMinutes"] == 15
    assert schedule["Target"]["RetryPolicy"]["MaximumRetryAttempts"] == 2


CRONTAB = """\
# m h dom mon dow command
MAILTO=ops@example.com
CRON_TZ=Europe/Berlin
30 2 * * * /usr/local/bin/backup --full
@daily /usr/local/bin/rotate-logs

TZ=America/New_York
*/10 * * * * /usr/local/bin/backup --full
@reboot /usr/local/bin/warm-cache
"""


def test_a_crontab_imports_once_and_a_reimport_days_later_changes_nothing(
    api: Api,
    endpoint: str,
    clock: ManualClock,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The API keeps an idempotency record for a day; a re-import a week later finds the jobs
    the first import made by their idempotency key instead of being refused by their names."""
    file = _file(tmp_path, "my.crontab", CRONTAB)
    dry = _run(capsys, endpoint, "import", "crontab", file, "--target", TARGET, "--dry-run")

    code, out, err = _run(capsys, endpoint, "import", "crontab", file, "--target", TARGET)
    first = json.loads(out)
    after_first = store_snapshot(api.svc)
    clock.advance(timedelta(days=7).total_seconds())
    code_again, out_again, _ = _run(capsys, endpoint, "import", "crontab", file, "--target", TARGET)

    assert (dry[0], code, code_again) == (1, 1, 1), "@reboot is refused, dry run or not"
    assert "1 of 4 refused" in err
    assert [row["result"] for row in first] == ["created", "created", "created", "refused"]
    again = json.loads(out_again)
    assert [(r["result"], r["job_id"]) for r in again] == [
        ("unchanged", r["job_id"]) if r["job_id"] else ("refused", None) for r in first
    ]
    assert store_snapshot(api.svc) == after_first
    jobs = {j["name"]: j for j in api.request("GET", "/v1/jobs").json["items"]}
    nightly = jobs["backup [30 2 * * *, Europe/Berlin]"]
    assert (nightly["schedule"], nightly["time_zone"]) == ("30 2 * * *", "Europe/Berlin")
    assert nightly["payload"] == {
        "command": "/usr/local/bin/backup --full",
        "env": {"MAILTO": "ops@example.com"},
    }
    assert jobs["rotate-logs"]["schedule"] == "@daily"
    often = jobs["backup [*/10 * * * *, America/New_York]"]
    assert often["time_zone"] == "America/New_York"


def test_a_reimport_names_what_was_changed_since_and_changes_nothing(
    api: Api, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _file(tmp_path, "schedules.json", json.dumps(SCHEDULES))
    (row,) = json.loads(_run(capsys, endpoint, "import", "eventbridge", file)[1])
    paused = api.request("PATCH", f"/v1/jobs/{row['job_id']}", body={"status": "paused"})
    assert paused.status == 200
    before = store_snapshot(api.svc)

    code, out, _ = _run(capsys, endpoint, "import", "eventbridge", file)

    assert code == 1
    (again,) = json.loads(out)
    assert (again["result"], again["job_id"]) == ("refused", row["job_id"])
    assert "differs from the source in status" in again["reason"]
    assert store_snapshot(api.svc) == before


DATA = Path(__file__).parents[1] / "data" / "migrate"


def test_what_export_writes_imports_back_as_the_same_jobs(
    api: Api, endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sample files in, `takt export` out, and the export in again: every job it wrote is
    the job it came from (same key, same definition), and nothing is created or changed."""
    k8s = ("import", "k8s", str(DATA / "cronjobs.yaml"), "--target", TARGET)
    assert _run(capsys, endpoint, *k8s)[0] == 0
    assert _run(capsys, endpoint, "import", "eventbridge", str(DATA / "get-schedule.json"))[0] == 0
    _run(capsys, endpoint, "import", "eventbridge", str(DATA / "schedules.json"))
    before = store_snapshot(api.svc)

    code_eb, schedules, _ = _run(capsys, endpoint, "export", "eventbridge")
    code_k8s, manifests, _ = _run(capsys, endpoint, "export", "k8s")
    exported = json.loads(schedules)
    eb_file = _file(tmp_path, "exported.json", schedules)
    k8s_file = _file(tmp_path, "exported.yaml", json.dumps(json.loads(manifests)))
    back_eb = json.loads(_run(capsys, endpoint, "import", "eventbridge", eb_file)[1])
    back_k8s = json.loads(_run(capsys, endpoint, "import", "k8s", k8s_file, "--target", TARGET)[1])

    assert (code_eb, code_k8s) == (0, 0)
    assert {s.get("GroupName", "default") + "/" + s["Name"] for s in exported["Schedules"]} == {
        "billing/month-end",
        "default/first-monday",
        "default/sunday-early",
        "default/sunday-quarters",
        "default/tokyo-2027",
        "default/every-five",
        "default/launch",
        "default/nightly-sync",
    }
    assert [row["result"] for row in back_eb] == ["unchanged"] * 8
    assert [row["result"] for row in back_k8s] == ["unchanged"] * 5
    assert store_snapshot(api.svc) == before
