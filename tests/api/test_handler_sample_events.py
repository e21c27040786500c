"""Each sample event in events/ runs through its Lambda handler on moto and answers as expected.

The events are the shapes AWS delivers (API Gateway HTTP API with a JWT authorizer, EventBridge
scheduled events, the ticker's claim task, an SQS batch), so these tests also pin the handlers'
contract with their triggers.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.handler import handler as api_handler
from functions.claimer.handler import handler as claimer_handler
from functions.scheduler.handler import handler as scheduler_handler
from functions.watchdog.handler import handler as watchdog_handler
from functions.worker.handler import handler as worker_handler
from takt.models.records import ExecState, ExecutionRecord, JobRecord
from takt.wiring import Services
from takt_cli.local.events import LocalContext
from takt_cli.local.runtime import free_port
from tests.api.harness import Api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EVENTS = Path(__file__).resolve().parents[2] / "events"
NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

Handler = Callable[[dict[str, Any], LambdaContext], Any]


def event(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS / name).read_text(encoding="utf-8"))
    return loaded


def invoke(handler: Handler, name: str, timeout_ms: int = 60_000) -> Any:
    """Run a handler on a sample event; a short timeout makes the minute-long loops stop early."""
    context = LocalContext(function_name=f"takt-{name}", timeout_ms=timeout_ms)
    return handler(event(name), cast(LambdaContext, context))


def store_job(svc: Services, job_id: str, target: str, **fields: Any) -> JobRecord:
    job = JobRecord(
        tenant_id="acme",
        job_id=job_id,
        target=target,
        anchor=NOON,
        created_at=NOON,
        updated_at=NOON,
        **fields,
    )
    svc.jobs.create(job)
    return job


def test_every_handler_has_a_sample_event() -> None:
    assert sorted(p.name for p in EVENTS.glob("*.json")) == [
        "api_create_job.json",
        "claimer_claim.json",
        "indexer_stream.json",
        "scheduler_tick.json",
        "watchdog_sweep.json",
        "worker_sqs_batch.json",
    ]


def test_api_sample_creates_the_job_for_the_tenant_in_the_jwt_claim(api: Api) -> None:
    result = invoke(api_handler, "api_create_job.json")

    assert result["statusCode"] == 201, result["body"]
    job = json.loads(result["body"])
    assert job["schedule"] == "0 6 * * *"
    assert result["headers"]["Location"] == f"/v1/jobs/{job['id']}"
    assert api.svc.jobs.get("acme", job["id"]).target == "https://svc/report"


def test_scheduler_sample_ticks_and_dispatches_what_is_due(api: Api) -> None:
    store_job(api.svc, "job_sampletick", "https://svc/report", run_at=NOON, next_run_time=NOON)
    api.svc.due.put("acme", "job_sampletick", NOON, NOON)

    result = invoke(scheduler_handler, "scheduler_tick.json", timeout_ms=3000)

    assert result == {"seconds": 1, "ticks": 1, "dispatched": 1}


def shard_2_job_id(shards: int) -> str:
    """A job id whose due items land in shard 2, the shard the claimer sample names."""
    return next(
        job_id
        for job_id in (f"job_sampleclaim{i:03d}" for i in range(1000))
        if zlib.crc32(f"acme#{job_id}".encode()) % shards == 2
    )


def test_claimer_sample_claims_its_bucket_and_shard(api: Api) -> None:
    job_id = shard_2_job_id(api.svc.settings.due_shards)
    store_job(api.svc, job_id, "https://svc/report", run_at=NOON, next_run_time=NOON)
    api.svc.due.put("acme", job_id, NOON, NOON)

    result = invoke(claimer_handler, "claimer_claim.json")

    assert result == {"due": 1, "dispatched": 1, "left": 0}


def test_worker_sample_runs_its_execution_and_reports_no_batch_failure(api: Api) -> None:
    message = json.loads(event("worker_sqs_batch.json")["Records"][0]["body"])
    # Nothing listens on this port: the call fails fast and is retried, as a 5xx would be.
    job = store_job(api.svc, message["job_id"], f"http://127.0.0.1:{free_port()}/hook")
    api.svc.executions.create(
        ExecutionRecord.for_job(job, message["execution_id"], NOON, ExecState.PENDING, NOON),
        check_at_ms=None,
    )

    result = invoke(worker_handler, "worker_sqs_batch.json")

    assert result == {"batchItemFailures": []}
    after = api.svc.executions.get("acme", message["execution_id"])
    assert (after.state, after.attempt) == (ExecState.RETRY_WAIT, 2)


def test_watchdog_sample_sweeps_once_and_reports_its_totals(api: Api) -> None:
    result = invoke(watchdog_handler, "watchdog_sweep.json", timeout_ms=5000)

    assert result == {
        "resent": 0,
        "lease_expired": 0,
        "dead": 0,
        "retries_released": 0,
        "reindexed": 0,
    }
