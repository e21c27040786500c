"""A stream record the indexer cannot index stops no batch (DESIGN invariant 9): it is parked in
quarantine and the batch's other records are indexed; only a transient failure is reported as a
partial batch failure, for Lambda to retry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.indexer.handler import handler
from takt.dispatch.indexer import DueIndexer
from takt.wiring import Services, install
from takt_cli.local.events import LocalContext
from tests.support.faults import crash_on
from tests.support.history import NOT_DUE_ITEMS

EVENTS = Path(__file__).resolve().parents[2] / "events"


def _batch() -> dict[str, Any]:
    """Three jobs' records: the second one's next run time cannot be read."""
    event = json.loads((EVENTS / "indexer_stream.json").read_text())
    template = event["Records"][0]
    records = []
    for n, next_run in enumerate(
        ["2026-03-03T06:00:00Z", "0500-13-45T99:00:00Z", "2026-03-03T07:00:00Z"]
    ):
        record = json.loads(json.dumps(template))
        change = record["dynamodb"]
        change["SequenceNumber"] = str(200 + n)
        change["Keys"]["job_id"] = {"S": f"job_batch{n}"}
        change["NewImage"]["job_id"] = {"S": f"job_batch{n}"}
        change["NewImage"]["next_run_time"] = {"S": next_run}
        records.append(record)
    return {"Records": records}


def _due_jobs(svc: Services) -> list[str]:
    items = svc.clients.dynamodb.scan(TableName=svc.settings.due_table, ConsistentRead=True)
    return sorted(
        i["due_key"]["S"].rsplit("#", 1)[1]
        for i in items["Items"]
        if not i["bucket"]["S"].startswith(NOT_DUE_ITEMS)
    )


def _invoke(svc: Services, event: dict[str, Any]) -> Any:
    install(svc)
    try:
        return handler(event, cast(LambdaContext, LocalContext(function_name="takt-indexer")))
    finally:
        install(None)


def test_a_bad_record_is_quarantined_and_the_rest_of_the_batch_is_indexed(
    svc: Services,
) -> None:
    result = _invoke(svc, _batch())

    assert result == {"batchItemFailures": []}
    assert _due_jobs(svc) == ["job_batch0", "job_batch2"]
    [record] = svc.quarantine.list()
    assert record.key == {"tenant_id": "acme", "job_id": "job_batch1"}
    assert record.where == "indexer"
    assert record.error == "ValueError: month must be in 1..12"


def test_only_a_transient_failure_is_reported_for_retry(svc: Services) -> None:
    # The third record's put fails as a throttled or timed-out call would: not a record fault.
    svc.__dict__["indexer"] = DueIndexer(
        crash_on(svc.due, "put", call=2, when="before"), svc.clock, svc.jobs, svc.quarantine
    )

    result = _invoke(svc, _batch())

    assert result == {"batchItemFailures": [{"itemIdentifier": "202"}]}
    assert _due_jobs(svc) == ["job_batch0"]
    assert [r.key["job_id"] for r in svc.quarantine.list()] == ["job_batch1"]
