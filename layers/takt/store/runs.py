"""A run's task items in the executions table, beside the executions of its tasks.

A run is its occurrence's execution (`<job id>.<token>`, in the job's history); everything else of
the run lives in one partition of its own, `<tenant>#<run id>`:

- `task#<task id>`: the task's definition snapshot and its state in the run: `waiting` until it
  ends, then its outcome (`succeeded`, `failed`, `dead`, `cancelled`) or `upstream_failed`; how
  many upstreams it still waits for (`waiting_on`) and how many of those that ended did not
  succeed (`bad_up`), both counters of constant size however wide the fan-in; and `gen`, the run
  generation (a retry of the run is the next one) whose execution it waits for;
- `exec#<task id>#<generation>`: the task's execution in that generation, an ordinary execution.

The partition key starts with the tenant, like every other key in the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.models.ids import split_execution_id
from takt.models.records import ExecutionRecord, RetryPolicy, TaskSpec, job_key
from takt.store.errors import is_condition_failure
from takt.store.items import execution_record

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

WAITING = "waiting"
UPSTREAM_FAILED = "upstream_failed"
SUCCEEDED = "succeeded"
ENDED_STATES = frozenset({SUCCEEDED, "failed", "dead", "cancelled", UPSTREAM_FAILED})
"""Task states that end a task in its generation; every one but `succeeded` fails the run."""


@dataclass(frozen=True)
class RunRef:
    """Which run: its tenant and id (the id of its occurrence's execution)."""

    tenant_id: str
    run_id: str

    @property
    def partition(self) -> str:
        """The partition of the run's task items and task executions."""
        return job_key(self.tenant_id, self.run_id)

    def key(self) -> dict[str, Any]:
        """The key of the run's own execution item."""
        job_id, token = split_execution_id(self.run_id)
        return {"job_key": {"S": job_key(self.tenant_id, job_id)}, "sk": {"S": token}}


@dataclass
class TaskItem:
    """One task of a run, as its item holds it."""

    task_id: str
    index: int
    spec: TaskSpec
    downstream: list[str]
    state: str = WAITING
    gen: int = 0
    waiting_on: int = 0
    bad_up: int = 0

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> TaskItem:
        spec = json.loads(item["spec_json"]["S"])
        return cls(
            task_id=item["task_id"]["S"],
            index=int(item["idx"]["N"]),
            spec=TaskSpec(
                id=item["task_id"]["S"],
                target=spec["target"],
                payload=spec.get("payload"),
                retry=RetryPolicy.model_validate(spec["retry"]),
                timeout_sec=spec["timeout_sec"],
                depends_on=[d["S"] for d in item.get("depends_on", {}).get("L", [])],
                trigger_rule=spec["trigger_rule"],
            ),
            downstream=[d["S"] for d in item.get("downstream", {}).get("L", [])],
            state=item["state"]["S"],
            gen=int(item["gen"]["N"]),
            waiting_on=int(item.get("waiting_on", {}).get("N", "0")),
            bad_up=int(item.get("bad_up", {}).get("N", "0")),
        )


class RunStore:
    """Reads and writes of a run's task items; every write is conditional or idempotent."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    @staticmethod
    def _key(run: RunRef, task_id: str) -> dict[str, Any]:
        return {"job_key": {"S": run.partition}, "sk": {"S": f"task#{task_id}"}}

    def item(
        self,
        run: RunRef,
        task: TaskSpec,
        index: int,
        downstream: list[str],
        expires_at: int,
    ) -> dict[str, Any]:
        spec = {
            "target": task.target,
            "payload": task.payload,
            "retry": task.retry.model_dump(mode="json"),
            "timeout_sec": task.timeout_sec,
            "trigger_rule": task.trigger_rule,
        }
        item: dict[str, Any] = {
            **self._key(run, task.id),
            "tenant_id": {"S": run.tenant_id},
            "run_id": {"S": run.run_id},
            "task_id": {"S": task.id},
            "idx": {"N": str(index)},
            "spec_json": {"S": json.dumps(spec, separators=(",", ":"))},
            "state": {"S": WAITING},
            "gen": {"N": "0"},
            "waiting_on": {"N": str(len(task.depends_on))},
            "bad_up": {"N": "0"},
            "expires_at": {"N": str(expires_at)},
        }
        if task.depends_on:
            item["depends_on"] = {"L": [{"S": d} for d in task.depends_on]}
        if downstream:
            item["downstream"] = {"L": [{"S": d} for d in downstream]}
        return item

    def put_all(self, items: list[dict[str, Any]]) -> None:
        """Write new task items, 25 a call (only the run's starter does, before any task runs)."""
        for start in range(0, len(items), 25):
            pending: list[Any] = [{"PutRequest": {"Item": i}} for i in items[start : start + 25]]
            while pending:
                resp = self._db.batch_write_item(RequestItems={self._table: pending})
                unprocessed: Any = resp.get("UnprocessedItems") or {}
                pending = list(unprocessed.get(self._table, []))

    def put_missing(self, item: dict[str, Any]) -> None:
        """Write a task item unless it exists (repairing a start that died midway)."""
        try:
            self._db.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(sk)"
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def tasks(self, run: RunRef) -> list[TaskItem]:
        """Every task item of the run, in definition order (consistent reads)."""
        items = self._query(run, "task#")
        return sorted((TaskItem.from_item(i) for i in items), key=lambda t: t.index)

    def executions(self, run: RunRef) -> list[ExecutionRecord]:
        """Every execution of the run's tasks, all generations."""
        return [execution_record(i) for i in self._query(run, "exec#")]

    def _query(self, run: RunRef, prefix: str) -> Iterator[dict[str, Any]]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "job_key = :k AND begins_with(sk, :p)",
            "ExpressionAttributeValues": {
                ":k": {"S": run.partition},
                ":p": {"S": prefix},
            },
            "ConsistentRead": True,
        }
        while True:
            resp = self._db.query(**kwargs)
            yield from resp.get("Items", [])
            if "LastEvaluatedKey" not in resp:
                return
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def end(self, run: RunRef, task_id: str, gen: int, state: str) -> TaskItem | None:
        """Record a waiting task's outcome in generation `gen`; the task, or None when someone
        recorded it first (or the task is in another generation).

        Only the one write that ends the task goes on to tell its downstream tasks and count it
        on the run, so no arrival is counted twice; a writer that dies before it finishes leaves
        the rest to the backstop, which decides from the tasks' states, not from the counters.
        """
        return self._update(
            run,
            task_id,
            "SET #s = :s",
            "gen = :g AND #s = :w",
            {":s": {"S": state}, ":g": {"N": str(gen)}, ":w": {"S": WAITING}},
        )

    def hear(self, run: RunRef, task_id: str, ok: bool) -> int | None:
        """Count one ended upstream on a waiting task: how many it still waits for, or None once
        it has left `waiting`. Constant size at any width."""
        update = "ADD waiting_on :m" + ("" if ok else ", bad_up :one")
        values: dict[str, Any] = {":m": {"N": "-1"}, ":w": {"S": WAITING}}
        if not ok:
            values[":one"] = {"N": "1"}
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=self._key(run, task_id),
                UpdateExpression=update,
                ConditionExpression="attribute_exists(sk) AND #s = :w",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return int(resp["Attributes"]["waiting_on"]["N"])

    def task(self, run: RunRef, task_id: str) -> TaskItem:
        resp = self._db.get_item(
            TableName=self._table, Key=self._key(run, task_id), ConsistentRead=True
        )
        return TaskItem.from_item(resp["Item"])

    def skip(self, run: RunRef, task_id: str) -> bool:
        """Mark a waiting task `upstream_failed`; False when it had left `waiting` already."""
        written = self._update(
            run,
            task_id,
            "SET #s = :f",
            "#s = :w",
            {":f": {"S": UPSTREAM_FAILED}, ":w": {"S": WAITING}},
        )
        return written is not None

    def reset(self, run: RunRef, task: TaskItem, gen: int, waiting_on: int) -> None:
        """Make an ended task wait again in generation `gen` for `waiting_on` upstreams."""
        self._update(
            run,
            task.task_id,
            "SET #s = :w, gen = :g, waiting_on = :n, bad_up = :zero",
            "gen = :old",
            {
                ":w": {"S": WAITING},
                ":g": {"N": str(gen)},
                ":n": {"N": str(waiting_on)},
                ":zero": {"N": "0"},
                ":old": {"N": str(task.gen)},
            },
        )

    def _update(
        self,
        run: RunRef,
        task_id: str,
        update: str,
        condition: str,
        values: dict[str, Any],
    ) -> TaskItem | None:
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=self._key(run, task_id),
                UpdateExpression=update,
                ConditionExpression=f"attribute_exists(sk) AND {condition}",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return TaskItem.from_item(resp["Attributes"])

    def note_ended(
        self, run: RunRef, gen: int, count: int, check_at: int
    ) -> tuple[int, ExecutionRecord] | None:
        """Count `count` more ended tasks on the run and move its backstop check later; the
        count now and the run, or None when the run is not running generation `gen` (it ended,
        or a retry started the next one)."""
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=run.key(),
                UpdateExpression="ADD ended_count :n SET check_at = :c",
                ConditionExpression="#s = :r AND run_gen = :g",
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":n": {"N": str(count)},
                    ":c": {"N": str(check_at)},
                    ":r": {"S": "running"},
                    ":g": {"N": str(gen)},
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        item = resp["Attributes"]
        return int(item["ended_count"]["N"]), execution_record(item)
