"""Scenario 19: records that cannot be read or written, beside healthy jobs in the same (minute,
shard), on the same watchdog shard and the same lane.

Planted while interval jobs run (every item in the one due shard and the one open shard):

- jobs whose stored next run time cannot be parsed, and one whose start is in year 500, each with
  a live due item;
- due items whose key cannot be parsed, in the bucket being claimed;
- executions whose state, or attempt log, cannot be parsed, due for the watchdog;
- a job whose payload (390 KB) brings its execution to DynamoDB's 400 KB item limit, so writes
  that grow the execution fail.

The verdict is about everyone else: every healthy job's occurrences (counted on its anchor by the
oracle) reached its target, through and after the planting. What became of the bad records
themselves is reported, read raw from the tables, not asserted: parking them is the product's
business, running the others is the guarantee.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from takt.aws import AwsClients
from takt.models.ids import to_ms
from takt.store.due import minute_of
from tests.chaos.conftest import Form, publish
from tests.chaos.oracle import table_items
from tests.chaos.sim import Sim, interval_jobs
from tests.support.history import HistoryChecker, judge
from tests.support.jobs import TENANT, make_execution, make_job, store_execution, store_job

PAD_BYTES = 390_000


def _plant(sim: Sim, clients: AwsClients) -> dict[str, list[str]]:
    """Write the bad records straight into the tables, as a bug or a hand edit would."""
    svc = sim.svc
    now = sim.clock.now()
    due = now + timedelta(seconds=3)
    db = clients.dynamodb
    planted: dict[str, list[str]] = {"jobs": [], "due": [], "executions": [], "large": []}
    for field, value in (("next_run_time", "not a time"), ("start_at", "0500-01-01T00:00:00Z")):
        job = store_job(svc, make_job(now=now, next_run_time=due, interval="7s", anchor=due), now)
        db.update_item(
            TableName=svc.settings.jobs_table,
            Key={"tenant_id": {"S": job.tenant_id}, "job_id": {"S": job.job_id}},
            UpdateExpression="SET #f = :v",
            ExpressionAttributeNames={"#f": field},
            ExpressionAttributeValues={":v": {"S": value}},
        )
        planted["jobs"].append(job.job_id)
    item = svc.due.item(TENANT, "job_unreadabledue", due, now)
    item["due_key"] = {"S": f"00a0{to_ms(due)}#{TENANT}#job_unreadabledue"}
    db.put_item(TableName=svc.settings.due_table, Item=item)
    planted["due"].append(item["due_key"]["S"])
    for attr, text in (("state", "bogus"), ("attempts", "not a list")):
        job = make_job(now=now, next_run_time=None, run_at=now)
        record = store_execution(svc, make_execution(job, now, now), now - timedelta(minutes=5))
        db.update_item(
            TableName=svc.settings.executions_table,
            Key=svc.executions.key(TENANT, record.execution_id),
            UpdateExpression="SET #a = :v",
            ExpressionAttributeNames={"#a": attr},
            ExpressionAttributeValues={":v": {"S": text}},
        )
        planted["executions"].append(record.execution_id)
    large = sim.add_job(
        interval="9s",
        anchor=due,
        next_run_time=due,
        payload={"log": str(sim.log.path), "fail": False, "pad": "x" * PAD_BYTES},
    )
    sim.jobs.remove(large)  # judged apart: not one of the healthy jobs
    planted["large"].append(large.job_id)
    return planted


def _fate(sim: Sim, clients: AwsClients, planted: dict[str, list[str]]) -> dict[str, object]:
    """What the tables hold of the bad records at the end, read raw."""
    executions = table_items(clients.dynamodb, sim.svc.settings.executions_table)
    states: dict[str, str] = {}
    for item in executions:
        job_key = item["job_key"]["S"]
        for job_id in planted["large"]:
            if job_key.endswith(job_id):
                states[item["sk"]["S"]] = str(item.get("state", {}).get("S"))
    return {"large_job_executions": states, "planted": planted}


def test_s19_bad_records_stop_no_one_else(
    make_sim: Any,
    clients: AwsClients,
    checker: HistoryChecker,
    form: Form,
    seed: int,
    report_for: Any,
) -> None:
    rng = random.Random(seed)
    sim: Sim = make_sim()
    interval_jobs(sim, form.pick(3, 10), rng)
    sim.run(10)
    planted = _plant(sim, clients)
    fault_start = sim.clock.now()
    sim.run(form.pick(60, 180))
    sim.settle(10)

    report = judge(
        checker,
        report_for("s19_bad_records"),
        sim.expectations(sim.horizon()),
        sim.log.read(),
    )
    report.faults = {
        "unparseable_jobs": len(planted["jobs"]),
        "unparseable_due_items": len(planted["due"]),
        "unparseable_executions": len(planted["executions"]),
        "large_payload_bytes": PAD_BYTES,
        "invocation_errors": dict(sim.errors),
    }
    report.extra = _fate(sim, clients, planted)
    publish(report)

    assert report.problems() == []
    assert report.occurrences > 0
    assert minute_of(sim.clock.now()) > minute_of(fault_start)  # claims crossed a minute
