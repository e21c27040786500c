"""The `takt` CLI against a running `takt local`: data on stdout (JSON or a table with headers),
errors as one line on stderr with a non-zero exit."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from takt.tenants.webhook_keys import verify
from takt_cli.commands.main import main
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e

JOB_HEADERS = ["ID", "NAME", "STATUS", "SCHEDULE", "TIME_ZONE", "NEXT_RUN_TIME", "LAST_OUTCOME"]
EXECUTION_HEADERS = ["ID", "STATE", "ATTEMPT", "SCHEDULED_TIME", "LAG_MS", "ERROR"]


class Cli:
    def __init__(
        self, endpoint: str, capsys: pytest.CaptureFixture[str], receiver: Receiver
    ) -> None:
        self.endpoint = endpoint
        self._capsys = capsys
        self.receiver = receiver

    def run(self, *args: str, output: str = "json") -> tuple[int, str, str]:
        code = main(["--endpoint", self.endpoint, "-o", output, *args])
        out, err = self._capsys.readouterr()
        return code, out, err

    def json(self, *args: str) -> Any:
        code, out, err = self.run(*args)
        assert code == 0, err
        assert err == ""
        return json.loads(out)

    def table(self, *args: str) -> list[list[str]]:
        code, out, err = self.run(*args, output="table")
        assert code == 0, err
        return [line.split() for line in out.splitlines()]

    def error(self, *args: str) -> str:
        code, out, err = self.run(*args)
        assert code != 0
        assert out == ""
        lines = err.splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("takt: error: ")
        return lines[0]

    def new_job(
        self, *extra: str, name: str | None = None, then: Reply | None = None
    ) -> dict[str, Any]:
        """An hourly job whose triggered runs call the receiver (answering `then`, 200)."""
        name = name or f"cli-{uuid.uuid4().hex[:8]}"
        target = self.receiver.path(then=then)
        job: dict[str, Any] = self.json(
            "jobs", "create", "--name", name, "--every", "1h", "--target", target, *extra
        )
        return job

    def wait_for_state(self, execution_id: str, state: str) -> None:
        poll(
            lambda: self.json("executions", "get", execution_id)["state"],
            lambda current: current == state,
            30,
            f"execution {execution_id} {state}",
        )


@pytest.fixture
def cli(takt_local: LocalTakt, capsys: pytest.CaptureFixture[str], receiver: Receiver) -> Cli:
    return Cli(takt_local.url, capsys, receiver)


def test_jobs_create_from_flags_prints_the_job_as_json(cli: Cli) -> None:
    job = cli.new_job("--payload", '{"a": 1}', "--priority", "high")

    assert job["id"].startswith("job_")
    assert (job["interval"], job["payload"], job["priority"]) == ("1h", {"a": 1}, "high")
    assert job["next_run_time"]


def test_jobs_create_from_a_body_file(cli: Cli, tmp_path: Path) -> None:
    body = tmp_path / "job.json"
    body.write_text(json.dumps({"schedule": "0 6 * * *", "target": "https://svc/report"}))

    job = cli.json("jobs", "create", "--body", f"@{body}")

    assert job["schedule"] == "0 6 * * *"


def test_jobs_create_with_the_same_idempotency_key_returns_the_same_job(cli: Cli) -> None:
    key = uuid.uuid4().hex
    args = (
        "jobs",
        "create",
        "--every",
        "1h",
        "--target",
        "https://svc/x",
        "--idempotency-key",
        key,
    )

    assert cli.json(*args)["id"] == cli.json(*args)["id"]


def test_jobs_create_table_has_headers_and_the_job(cli: Cli) -> None:
    rows = cli.table("jobs", "create", "--every", "1h", "--target", "https://svc/x")

    assert rows[0] == JOB_HEADERS
    assert len(rows) == 2
    assert rows[1][0].startswith("job_")
    assert rows[1][3:5] == ["every", "1h"]


def test_invalid_cron_is_one_error_line_naming_the_field(cli: Cli) -> None:
    line = cli.error("jobs", "create", "--cron", "0 0 30 2 *", "--target", "https://svc/x")

    assert line.startswith("takt: error: 400 schedule:")


def test_jobs_get_prints_the_job_with_its_next_runs(cli: Cli) -> None:
    job = cli.new_job()

    shown = cli.json("jobs", "get", job["id"])

    assert {key: shown[key] for key in job} == job
    assert shown["schedule_description"].startswith("every 1 hour from ")
    assert shown["next_runs"][0]["at"] == job["next_run_time"]
    assert len(shown["next_runs"]) == 5


def test_jobs_get_table_lists_the_next_five_runs_in_the_jobs_zone(cli: Cli) -> None:
    target = cli.receiver.path()
    job = cli.json(
        "jobs", "create", "--cron", "0 6 * * 1-5", "--tz", "Europe/Berlin", "--target", target
    )

    code, out, err = cli.run("jobs", "get", job["id"], output="table")

    assert code == 0, err
    lines = out.splitlines()
    assert "schedule:  at 06:00 on Monday to Friday (Europe/Berlin)" in lines
    runs = [line.split() for line in lines[lines.index("next runs:") + 1 :]]
    assert len(runs) == 5
    # Each run once, in UTC: 06:00 in Berlin.
    berlin = ZoneInfo("Europe/Berlin")
    for (at,) in runs:
        assert at.endswith("Z")
        assert datetime.fromisoformat(at).astimezone(berlin).strftime("%H:%M") == "06:00"


def test_jobs_are_found_by_name_where_ids_are_taken(cli: Cli) -> None:
    name = f"named-{uuid.uuid4().hex[:8]}"
    job = cli.new_job(name=name)
    execution = cli.json("jobs", "trigger", name)

    shown = cli.json("jobs", "get", name)
    listed = cli.json("executions", "list", name)

    assert shown["id"] == job["id"]
    assert [e["id"] for e in listed["items"]] == [execution["id"]]
    assert cli.error("jobs", "get", "no-such-name").startswith(
        "takt: error: no job named 'no-such-name' (and it is not a job id); a deleted job's "
        "history is listed by the name it had: takt executions list no-such-name"
    )


def test_jobs_create_has_a_flag_for_each_common_field(cli: Cli) -> None:
    job = cli.json(
        *("jobs", "create", "--cron", "0 6 * * *", "--target", cli.receiver.path()),
        *("--tz", "Europe/Berlin", "--payload", '{"a": 1}', "--priority", "high"),
        *("--timeout", "30", "--max-attempts", "3", "--backoff", "fixed"),
        *("--retry-initial", "2s", "--retry-max", "10s", "--retry-jitter", "none"),
        *("--overlap", "skip", "--catchup", "all", "--catchup-window", "2h"),
        *("--dst-gap", "skip", "--dst-overlap", "twice"),
    )

    assert (job["time_zone"], job["payload"], job["priority"]) == (
        "Europe/Berlin",
        {"a": 1},
        "high",
    )
    assert job["timeout_sec"] == 30
    assert job["retry"] == {
        "max_attempts": 3,
        "backoff": "fixed",
        "initial_interval": "2s",
        "max_interval": "10s",
        "jitter": "none",
    }
    assert (job["overlap"], job["catchup"], job["catchup_window"]) == ("skip", "all", "2h")
    assert job["dst"] == {"gap": "skip", "overlap": "twice"}


def test_jobs_create_and_update_have_notification_flags(cli: Cli) -> None:
    hook = cli.receiver.path()
    job = cli.new_job("--notify-to", hook, "--notify-on", "dead")

    updated = cli.json("jobs", "update", job["id"], "--notify-after", "5")

    assert job["notify"] == {"to": hook, "on": ["dead"], "after_failures": 3}
    assert updated["notify"] == {"to": hook, "on": ["dead"], "after_failures": 5}


def test_jobs_update_flags_change_only_what_they_name(cli: Cli) -> None:
    job = cli.new_job("--backoff", "fixed", "--max-attempts", "4")

    updated = cli.json("jobs", "update", job["id"], "--max-attempts", "2", "--timeout", "9")

    assert updated["retry"] == {**job["retry"], "max_attempts": 2}
    assert (updated["timeout_sec"], updated["target"]) == (9, job["target"])


def test_jobs_create_method_and_header_flags_shape_the_http_call(cli: Cli) -> None:
    job = cli.new_job("--method", "put", "--header", "X-Team: ops", "--header", "X-Run:1")
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "succeeded")

    [hit] = cli.receiver.hits(json.loads(job["target"])["url"])
    assert hit.method == "PUT"
    assert (hit.header("X-Team"), hit.header("X-Run")) == ("ops", "1")


def test_jobs_update_method_flag_keeps_the_url_and_headers(cli: Cli) -> None:
    job = cli.new_job("--header", "X-Team: ops")

    updated = cli.json("jobs", "update", job["id"], "--method", "GET", "--max-attempts", "2")

    assert json.loads(updated["target"]) == {**json.loads(job["target"]), "method": "GET"}
    assert updated["retry"]["max_attempts"] == 2


def test_method_on_a_target_that_is_not_http_is_one_error_line(cli: Cli) -> None:
    line = cli.error("jobs", "create", "--every", "1h", "--target", "handler:x", "--method", "GET")

    assert line == ("takt: error: --method and --header apply to an http(s) target (--target URL)")


def test_jobs_update_payload_replaces_the_payload_whole(cli: Cli) -> None:
    without = cli.new_job()
    with_one = cli.new_job("--payload", '{"a": 1, "b": 2}')

    set_from_none = cli.json("jobs", "update", without["id"], "--payload", '{"n": 1}')
    replaced = cli.json("jobs", "update", with_one["id"], "--payload", '{"n": 1}')

    assert without["payload"] is None
    assert set_from_none["payload"] == {"n": 1}
    assert replaced["payload"] == {"n": 1}


def test_jobs_create_payload_flag_overrides_the_body_s_payload(cli: Cli) -> None:
    body = {"interval": "1h", "target": cli.receiver.path(), "payload": {"a": 1}}

    job = cli.json("jobs", "create", "--body", json.dumps(body), "--payload", '{"n": 1}')

    assert job["payload"] == {"n": 1}


def test_jobs_update_without_a_change_is_one_error_line(cli: Cli) -> None:
    job = cli.new_job()

    assert cli.error("jobs", "update", job["id"]).startswith("takt: error: nothing to change")


def test_executions_get_table_lists_each_attempt(cli: Cli) -> None:
    job = cli.new_job("--max-attempts", "2", "--retry-initial", "1s", "--retry-jitter", "none")
    failing = cli.receiver.path(first=[Reply(500)], then=Reply(200))
    cli.json("jobs", "update", job["id"], "--target", failing)
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "succeeded")

    rows = cli.table("executions", "get", execution_id)

    attempts = rows[rows.index(["attempts:"]) + 1 :]
    assert attempts[0][:3] == ["ATTEMPT", "OUTCOME", "STATUS_CODE"]
    assert [row[:3] for row in attempts[1:]] == [["1", "retry", "500"], ["2", "succeeded", "200"]]


def test_jobs_get_table_has_headers(cli: Cli) -> None:
    job = cli.new_job()

    rows = cli.table("jobs", "get", job["id"])

    assert rows[0] == JOB_HEADERS
    assert rows[1][:3] == [job["id"], job["name"], "active"]


def test_jobs_get_of_an_unknown_job_is_one_404_error_line(cli: Cli) -> None:
    assert cli.error("jobs", "get", "job_nothere").startswith("takt: error: 404 ")


def test_jobs_list_filters_by_name_prefix(cli: Cli) -> None:
    prefix = f"batch-{uuid.uuid4().hex[:6]}"
    ids = [cli.new_job(name=f"{prefix}-{i}")["id"] for i in range(2)]
    cli.new_job()

    page = cli.json("jobs", "list", "--name", prefix)

    assert [j["id"] for j in page["items"]] == ids


def test_jobs_list_table_has_headers(cli: Cli) -> None:
    job = cli.new_job()

    rows = cli.table("jobs", "list", "--name", job["name"])

    assert rows[0] == JOB_HEADERS
    assert [r[0] for r in rows[1:]] == [job["id"]]


def test_jobs_update_changes_the_schedule(cli: Cli) -> None:
    job = cli.new_job()

    updated = cli.json("jobs", "update", job["id"], "--body", '{"schedule": "*/5 * * * *"}')

    assert (updated["schedule"], updated["interval"]) == ("*/5 * * * *", None)
    assert updated["version"] == job["version"] + 1


def test_jobs_update_with_a_stale_version_is_one_412_error_line(cli: Cli) -> None:
    job = cli.new_job()
    cli.json("jobs", "update", job["id"], "--body", '{"name": "moved-on"}')

    line = cli.error(
        "jobs", "update", job["id"], "--body", '{"name": "mine"}', "--if-match", str(job["version"])
    )

    assert line.startswith("takt: error: 412 ")
    assert cli.json("jobs", "get", job["id"])["name"] == "moved-on"


def test_jobs_pause_then_resume(cli: Cli) -> None:
    job = cli.new_job()

    paused = cli.json("jobs", "pause", job["id"])
    resumed = cli.json("jobs", "resume", job["id"])

    assert paused["status"] == "paused"
    assert resumed["status"] == "active"
    assert resumed["next_run_time"]


def test_jobs_delete_then_get_is_one_404_error_line(cli: Cli) -> None:
    job = cli.new_job()

    assert cli.json("jobs", "delete", job["id"]) == {"deleted": job["id"]}
    assert cli.error("jobs", "get", job["id"]).startswith("takt: error: 404 ")


def test_jobs_trigger_prints_a_pending_manual_execution(cli: Cli) -> None:
    job = cli.new_job()

    execution = cli.json("jobs", "trigger", job["id"])

    assert execution["job_id"] == job["id"]
    assert (execution["state"], execution["trigger"]) == ("pending", "manual")


def test_executions_list_is_newest_first(cli: Cli) -> None:
    job = cli.new_job()
    first = cli.json("jobs", "trigger", job["id"])["id"]
    second = poll(
        lambda: cli.json("jobs", "trigger", job["id"])["id"],
        lambda new: new != first,
        10,
        "a second trigger",
    )

    page = cli.json("executions", "list", job["id"])

    assert [e["id"] for e in page["items"]] == [second, first]


def test_executions_list_table_has_headers(cli: Cli) -> None:
    job = cli.new_job()
    execution = cli.json("jobs", "trigger", job["id"])

    rows = cli.table("executions", "list", job["id"])

    assert rows[0] == EXECUTION_HEADERS
    assert [r[0] for r in rows[1:]] == [execution["id"]]


def test_executions_get_prints_the_execution(cli: Cli) -> None:
    job = cli.new_job()
    execution = cli.json("jobs", "trigger", job["id"])

    shown = cli.json("executions", "get", execution["id"])

    assert (shown["id"], shown["job_id"]) == (execution["id"], job["id"])


def test_executions_get_of_an_unknown_execution_is_one_404_error_line(cli: Cli) -> None:
    line = cli.error("executions", "get", "job_nothere.20260302T120000000Z")

    assert line.startswith("takt: error: 404 ")


def test_executions_retry_reruns_a_failed_execution(cli: Cli) -> None:
    job = cli.new_job(then=Reply(404))
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "failed")

    rerun = cli.json("executions", "retry", execution_id)

    assert (rerun["id"], rerun["state"], rerun["attempt"]) == (execution_id, "pending", 2)


def test_executions_retry_after_a_fix_calls_the_fixed_target(cli: Cli) -> None:
    job = cli.new_job(then=Reply(404))
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "failed")
    fixed = cli.receiver.path()
    cli.json("jobs", "update", job["id"], "--body", json.dumps({"target": fixed}))

    cli.json("executions", "retry", execution_id)

    cli.wait_for_state(execution_id, "succeeded")
    assert len(cli.receiver.hits(fixed)) == 1


def test_executions_retry_as_was_calls_the_old_target_again(cli: Cli) -> None:
    job = cli.new_job(then=Reply(404))
    old = cli.json("jobs", "get", job["id"])["target"]
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "failed")
    cli.json("jobs", "update", job["id"], "--body", json.dumps({"target": cli.receiver.path()}))

    cli.json("executions", "retry", "--as-was", execution_id)

    cli.receiver.wait_for(old, 2, 30)
    cli.wait_for_state(execution_id, "failed")


def test_executions_retry_dead_re_runs_every_failed_execution_of_a_job(cli: Cli) -> None:
    job = cli.new_job(then=Reply(404))
    ids = [cli.json("jobs", "trigger", job["id"])["id"] for _ in range(2)]
    for execution_id in ids:
        cli.wait_for_state(execution_id, "failed")

    result = cli.json("executions", "retry-dead", "--state", "failed", job["id"])

    assert sorted(e["id"] for e in result["items"]) == sorted(ids)
    assert result["more"] is False


def test_an_execution_that_succeeded_on_a_retry_shows_no_error_in_tables(cli: Cli) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    target = cli.receiver.path(first=[Reply(500)])
    job = cli.json(
        *("jobs", "create", "--name", name, "--every", "1h", "--target", target),
        *("--backoff", "fixed", "--retry-initial", "1s", "--retry-jitter", "none"),
    )
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "succeeded")

    [listed] = [r for r in cli.table("executions", "list", name) if r[0] == execution_id]
    got = cli.table("executions", "get", execution_id)

    assert listed[1:3] == ["succeeded", "2"]
    assert listed[-1] == "-"
    assert got[1][-1] == "-"
    assert "HTTP 500" in " ".join(" ".join(line) for line in got[2:])  # the first attempt's


def test_executions_list_table_says_how_to_reach_the_next_page(cli: Cli) -> None:
    job = cli.new_job()
    for _ in range(2):
        cli.json("jobs", "trigger", job["id"])

    code, out, err = cli.run("executions", "list", job["id"], "--limit", "1", output="table")

    assert code == 0
    assert len(out.splitlines()) == 2
    assert err.startswith("next page: --cursor ")


def test_executions_dead_table_names_each_execution_s_job(cli: Cli) -> None:
    name = f"named-{uuid.uuid4().hex[:8]}"
    job = cli.new_job(then=Reply(404), name=name)
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "failed")

    rows = cli.table("executions", "dead", "--state", "failed")

    assert rows[0] == ["ID", "JOB", "ATTEMPT", "FINISHED_AT", "ERROR"]
    [row] = [r for r in rows if r[0] == execution_id]
    assert row[1] == name


def test_executions_retry_of_a_succeeded_execution_is_one_409_error_line(cli: Cli) -> None:
    job = cli.new_job()
    execution_id = cli.json("jobs", "trigger", job["id"])["id"]
    cli.wait_for_state(execution_id, "succeeded")

    line = cli.error("executions", "retry", execution_id)

    assert line.startswith("takt: error: 409 ")


def test_the_local_tenants_webhook_key_is_shown_and_signs_its_requests(cli: Cli) -> None:
    shown = cli.json("tenants", "webhook-key", "show", "local")
    job = cli.new_job()

    cli.json("jobs", "trigger", job["id"])
    (hit,) = cli.receiver.wait_for(job["target"], 1, 30)
    rotated = cli.json("tenants", "webhook-key", "rotate", "local", "--overlap", "1h")

    keys = [key["secret"] for key in shown["keys"]]
    assert shown["tenant"] == "local"
    assert [key["generation"] for key in shown["keys"]] == [0]
    assert verify(
        keys,
        hit.header("webhook-id") or "",
        hit.header("webhook-timestamp") or "",
        hit.body,
        hit.header("webhook-signature") or "",
    )
    assert not verify(
        [rotated["keys"][0]["secret"]],
        hit.header("webhook-id") or "",
        hit.header("webhook-timestamp") or "",
        hit.body,
        hit.header("webhook-signature") or "",
    )
    assert [key["secret"] for key in rotated["keys"]][1:] == keys
