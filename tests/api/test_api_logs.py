"""The api function's log lines name the job and execution a request concerns."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.api.harness import Api

LogLines = Callable[[], list[dict[str, Any]]]


def test_a_change_is_logged_once_with_its_job_id_and_status(api: Api, log_lines: LogLines) -> None:
    job = api.created_job({"interval": "1h", "target": "https://svc/x"})

    api.request("PATCH", f"/v1/jobs/{job['id']}", {"name": "renamed"})

    changes = [line for line in log_lines() if line["message"] == "api change"]
    assert [(c["method"], c.get("job_id"), c["status"]) for c in changes] == [
        ("POST", None, 201),
        ("PATCH", job["id"], 200),
    ]


def test_a_retry_is_logged_with_its_execution_id(api: Api, log_lines: LogLines) -> None:
    job = api.created_job({"interval": "1h", "target": "https://svc/x"})
    execution = api.request("POST", f"/v1/jobs/{job['id']}/trigger").json

    api.request("POST", f"/v1/executions/{execution['id']}/retry")

    (retry,) = [line for line in log_lines() if line.get("path", "").endswith("/retry")]
    assert (retry["job_id"], retry["execution_id"], retry["status"]) == (
        job["id"],
        execution["id"],
        409,
    )


def test_reads_are_not_logged(api: Api, log_lines: LogLines) -> None:
    api.request("GET", "/v1/jobs")

    assert [line for line in log_lines() if line["message"] == "api change"] == []
