"""A workflow through `takt local` as a user drives it over HTTP and with the CLI: a diamond of
HTTP tasks whose middle fails once, the run failed with its downstream not run, a retry that
re-runs only that part, and the run printed as a tree."""

from __future__ import annotations

import json
from typing import Any

import pytest

from takt_cli.commands.main import main
from tests.e2e.harness import LocalTakt, poll
from tests.e2e.receiver import Receiver, Reply

pytestmark = pytest.mark.e2e

DONE_WITHIN_SEC = 30.0


def _run(takt_local: LocalTakt, run_id: str) -> dict[str, Any]:
    answer = takt_local.request("GET", f"/v1/runs/{run_id}")
    assert answer.status == 200, answer.body
    run: dict[str, Any] = answer.body
    return run


def _ended(run: dict[str, Any]) -> bool:
    return run["state"] in ("succeeded", "failed")


def test_a_diamond_fails_in_the_middle_then_a_retry_finishes_it(
    takt_local: LocalTakt, receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = {
        "a": receiver.path(),
        "b": receiver.path(first=[Reply(status=400)]),  # a permanent failure, once
        "c": receiver.path(),
        "d": receiver.path(),
    }
    deps = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    job = takt_local.create_job(
        {
            "interval": "1h",
            "tasks": [{"id": t, "target": urls[t], "depends_on": deps[t]} for t in "abcd"],
        }
    )
    trigger = takt_local.request("POST", f"/v1/jobs/{job['id']}/trigger")
    assert trigger.status == 202, trigger.body
    run_id = trigger.body["id"]

    failed = poll(lambda: _run(takt_local, run_id), _ended, DONE_WITHIN_SEC, "failed run")
    assert failed["state"] == "failed"
    assert {t["id"]: t["state"] for t in failed["tasks"]} == {
        "a": "succeeded",
        "b": "failed",
        "c": "succeeded",
        "d": "upstream_failed",
    }
    assert [len(receiver.hits(urls[t])) for t in "abcd"] == [1, 1, 1, 0]

    assert main(["--endpoint", takt_local.url, "-o", "json", "runs", "retry", run_id]) == 0
    assert json.loads(capsys.readouterr().out)["generation"] == 1
    done = poll(lambda: _run(takt_local, run_id), _ended, DONE_WITHIN_SEC, "retried run")
    assert done["state"] == "succeeded"
    # a and c kept their result; b ran again; d ran once, after it.
    assert [len(receiver.hits(urls[t])) for t in "abcd"] == [1, 2, 1, 1]

    assert main(["--endpoint", takt_local.url, "runs", "get", run_id]) == 0
    tree = capsys.readouterr().out.splitlines()
    assert tree[0].startswith(f"run {run_id}  succeeded  generation 1  4 tasks: 4 succeeded")
    assert tree[1].startswith("└── a  succeeded  attempt 1")
    assert any(line.strip().startswith("└── d  succeeded") for line in tree)
    listed = takt_local.request("GET", f"/v1/jobs/{job['id']}/runs").body
    assert [r["id"] for r in listed["items"]] == [run_id]
