"""Targets are validated once: every place a target enters takt accepts and refuses the same ones.

The entry points are the API's job and workflow-task models (the string and object forms), the
importers' check (`takt import ... --dry-run` refuses what the API would), the store reading a
job and a stored task back, and the worker routing a call. A kind one of them accepts and another
refuses would mean a second validator: the table below fails on it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from takt.api.models import JobCreate
from takt.models.calls import CallContext, TargetResult
from takt.models.records import TaskSpec
from takt.models.targets import TargetSpec
from takt.store.items import job_item, job_record
from takt.targets.http import HttpTarget
from takt.targets.invoke import AwsInvokeTarget
from takt.targets.publish import QueueTopicTarget
from takt.targets.router import TargetRouter
from takt.workflows.model import TaskIn
from takt_cli.migrate.model import Imported, checked
from tests.support.jobs import make_job

NOW = datetime(2026, 3, 2, 12, tzinfo=UTC)
ARN = "arn:aws:{}:us-east-1:123456789012:{}"
API_URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/prod/hook"

GOOD = [
    "https://svc.example/hook",
    "HTTP://127.0.0.1:9001/x?y=1",
    "handler:billing.close-month_v2",
    ARN.format("sqs", "jobs.fifo"),
    "https://sqs.eu-west-1.amazonaws.com/123456789012/jobs",
    ARN.format("sns", "events"),
    ARN.format("events", "event-bus/orders"),
    ARN.format("lambda", "function:report:live"),
    json.dumps(
        {"type": "lambda", "function": ARN.format("lambda", "function:r"), "invocation": "Event"}
    ),
    ARN.format("states", "stateMachine:orders"),
    json.dumps({"type": "http", "url": "https://svc/x", "method": "PUT", "headers": {"X-A": "1"}}),
    json.dumps({"type": "http", "url": API_URL, "auth": {"sigv4": {}}}),
    json.dumps({"type": "http", "url": "https://svc/x", "auth": {"oidc": {}}}),
]
BAD = [
    "",
    "ftp://svc/x",
    "send_report",
    "handler:has space",
    "https://svc/x y",
    "https://svc/x\t",
    "https://svc\u200b.example/x",
    "http://127.0.0.1:99999/hook",
    "https://svc/" + "x" * 4096,  # longer than a stored target may be
    ARN.format("lambda", "layer:x"),
    ARN.format("sqs", "bad/name"),
    ARN.format("events", "rule/nightly"),
    "arn:aws:s3:::bucket",
    "https://sqs.us-east-1.amazonaws.com/123456789012",
    "https://sqs.us-east-1.amazonaws.com/123456789012/jobs\n",
    json.dumps({"type": "handler", "name": "send_report"}),
    json.dumps({"type": "http", "url": "https://svc/x", "headers": {"Connection": "close"}}),
    json.dumps({"type": "http", "url": "https://svc/x", "auth": {"sigv4": True}}),
    json.dumps({"type": "http", "url": "https://svc/x", "extra": 1}),
    json.dumps(
        {
            "type": "http",
            "url": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
            "method": "PUT",
        }
    ),
    json.dumps({"type": "lambda", "function": ARN.format("sns", "t"), "invocation": "Event"}),
    "{not json",
]


class _Called:
    """Stands for each kind's caller: records what the router hands it."""

    def __init__(self) -> None:
        self.specs: list[TargetSpec] = []

    def call(self, spec: TargetSpec, ctx: CallContext) -> TargetResult:
        self.specs.append(spec)
        return TargetResult("success")


def _accepted(check: Callable[[str], object], target: str) -> bool:
    try:
        check(target)
    except ValueError:
        return False
    return True


def _api(target: str) -> None:
    JobCreate.model_validate({"interval": "1h", "target": target})


def _workflow_task(target: str) -> None:
    TaskIn.model_validate({"id": "a", "target": target})


def _importers(target: str) -> None:
    item = checked(Imported(source="s", key="k", body={"interval": "1h", "target": target}))
    if item.body is None:
        raise ValueError(item.reason)


def _store_job(target: str) -> None:
    item = job_item(make_job(now=NOW, next_run_time=NOW))
    job_record({**item, "target": {"S": target}})


def _store_task(target: str) -> None:
    TaskSpec.model_validate({"id": "a", "target": target})


def _worker(target: str) -> None:
    called = _Called()
    router = TargetRouter(
        http=cast(HttpTarget, called),
        publisher=cast(QueueTopicTarget, called),
        invoker=cast(AwsInvokeTarget, called),
    )
    ctx = CallContext(
        job_id="j", execution_id="e", attempt=1, scheduled_time=NOW, payload=None, timeout_sec=1
    )
    result = router.call(target, ctx)
    if (result.error or "").startswith("unsupported target"):
        raise ValueError(result.error)


ENTRY_POINTS: dict[str, Callable[[str], Any]] = {
    "api": _api,
    "workflow task": _workflow_task,
    "importers": _importers,
    "store: job read back": _store_job,
    "store: task read back": _store_task,
    "worker": _worker,
}


@pytest.mark.parametrize(("target", "good"), [(t, True) for t in GOOD] + [(t, False) for t in BAD])
def test_one_validator_every_entry_point_accepts_and_refuses_the_same_targets(
    target: str, good: bool
) -> None:
    accepted = {name: _accepted(check, target) for name, check in ENTRY_POINTS.items()}

    expected = dict.fromkeys(ENTRY_POINTS, good)
    assert accepted == expected, (
        f"one validator of targets: {target[:80]!r} is {'good' if good else 'bad'} at every entry "
        "point, or a second validator disagrees"
    )
