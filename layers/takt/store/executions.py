"""The executions table: the history, and the state machine every worker and watchdog fences on.

Key: (`<tenant>#<job id>`, occurrence token), so a job's history is one partition read newest
first, and an execution id (`<job id>.<token>`) maps to its key without an index. Executions that
still need someone to act carry `open_shard`/`check_at`, which puts them in the sparse `open`
index the watchdog reads; a terminal write removes both.

Dead and failed executions, the ones a person has to look at, carry `attention_key` and
`attention_at`, which put them in the sparse `attention` index the dead-letter listing reads.
`transition` keeps that membership in step with `state` on every state change, so no caller can
forget it; sharding the key keeps a burst of deaths from overloading one index partition.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.models.ids import execution_key, parse_time, scheduled_of, to_ms
from takt.models.records import TERMINAL_STATES, ExecState, ExecutionRecord, job_key
from takt.observability import logger
from takt.resources import ATTENTION_INDEX, OPEN_INDEX
from takt.store.batch import batch_get
from takt.store.errors import (
    ExecutionConflictError,
    NotFoundError,
    condition_failure_item,
    is_condition_failure,
)
from takt.store.items import execution_item, execution_record, to_attr_map
from takt.store.jobs import ATTENTION_CURSOR, EXECUTION_CURSOR, checked_cursor
from takt.store.quarantine import Unreadable, readable
from takt.store.watches import ExecutionRef, Watched

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


ATTENTION_STATES = frozenset({ExecState.DEAD, ExecState.FAILED})
# An execution item's key attributes, as a quarantine record names an unreadable one.
EXECUTION_KEY = ("job_key", "sk")
# The states an execution ends in, each noted on its job (or, a success, skipped when it would
# change nothing: `ExecutionStore.newest_ended_after`).
ENDED = tuple(sorted(state.value for state in TERMINAL_STATES))
"""Terminal states that need a person: the dead-letter listing shows these."""
_ATTENTION_ATTRS = ("attention_key", "attention_at")


def open_shard_of(execution_id: str, shards: int) -> str:
    return str(zlib.crc32(execution_id.encode()) % shards)


def attention_key(tenant_id: str, state: ExecState, shard: int | str) -> str:
    return f"{tenant_id}#{state.value}#{shard}"


def lease_fence(record: ExecutionRecord) -> dict[str, object]:
    """The `expect` of a write that only the lease holder of `record` may make (DESIGN
    invariant 4): still running, at the same attempt, under the same lease token."""
    return {
        "state": ExecState.RUNNING,
        "attempt": record.attempt,
        "lease_token": record.lease_token,
    }


@dataclass(frozen=True)
class OpenCandidate:
    """An entry of the `open` index: the execution's table key, and its ids as the index holds
    them (None when the item lacks one: the execution cannot be read, and is quarantined)."""

    job_key: str
    sk: str
    tenant_id: str | None
    execution_id: str | None


@dataclass
class Transition:
    """A conditional update of one execution: what must hold, and what to change.

    `expect` maps attribute -> value (or a tuple of allowed values); every transition is fenced
    by at least the attempt, so a stale actor's write fails instead of applying. `expect_absent`
    names attributes that must not exist: a retry is fenced on `cancel_requested` so that a
    cancel asked for after the writer's read wins. The named operations that build these are
    in `takt.executions.lifecycle`.
    """

    expect: dict[str, Any]
    set: dict[str, Any] = field(default_factory=dict)
    set_if_absent: dict[str, Any] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    append_attempt: dict[str, Any] | None = None
    add: dict[str, int] = field(default_factory=dict)
    expect_absent: tuple[str, ...] = ()


class ExecutionStore:
    def __init__(
        self, client: DynamoDBClient, table: str, open_shards: int, retention_sec: int
    ) -> None:
        self._db = client
        self._table = table
        self.open_shards = open_shards
        self._retention_sec = retention_sec

    @property
    def client(self) -> DynamoDBClient:
        """The table's client, for stores that keep items of their own in it (workflow runs)."""
        return self._db

    @property
    def table(self) -> str:
        return self._table

    @property
    def retention_sec(self) -> int:
        return self._retention_sec

    @staticmethod
    def key(tenant_id: str, execution_id: str) -> dict[str, Any]:
        partition, sk = execution_key(execution_id)
        return {"job_key": {"S": job_key(tenant_id, partition)}, "sk": {"S": sk}}

    def create(
        self, record: ExecutionRecord, *, check_at_ms: int | None, region_epoch: int | None = None
    ) -> bool:
        """Create an execution under its deterministic id; False if it already exists.

        With `check_at_ms` an execution that has not ended enters the `open` index, for the
        watchdog to look at then; without, it stays out (a claim's watch list covers it,
        `takt.store.watches`). A multi-region claim stamps the `region_epoch` it acted at."""
        open_shard = (
            None
            if record.state.terminal or check_at_ms is None
            else open_shard_of(record.execution_id, self.open_shards)
        )
        item = execution_item(
            record,
            open_shard=open_shard,
            check_at=None if open_shard is None else check_at_ms,
            expires_at=int(record.created_at.timestamp()) + self._retention_sec,
        )
        if region_epoch is not None:
            item["region_epoch"] = {"N": str(region_epoch)}
        try:
            self._db.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(sk)",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def get(self, tenant_id: str, execution_id: str, *, consistent: bool = True) -> ExecutionRecord:
        try:
            key = self.key(tenant_id, execution_id)
        except ValueError as exc:
            raise NotFoundError(execution_id) from exc
        resp = self._db.get_item(TableName=self._table, Key=key, ConsistentRead=consistent)
        if "Item" not in resp:
            raise NotFoundError(execution_id)
        return execution_record(resp["Item"])

    def transition(self, tenant_id: str, execution_id: str, change: Transition) -> ExecutionRecord:
        """Apply a fenced change; ConflictError (with the current item) when the fence fails."""
        change = self._with_open(execution_id, change)
        change = self._with_attention(tenant_id, execution_id, change)
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        condition = _fence(change, names, values)
        update = _update_expression(change, names, values)
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key=self.key(tenant_id, execution_id),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                current = condition_failure_item(exc)
                if current is None:
                    raise NotFoundError(execution_id) from exc
                raise ExecutionConflictError(
                    f"execution {execution_id} changed", execution_record(current)
                ) from exc
            raise
        return execution_record(resp["Attributes"])

    def _with_open(self, execution_id: str, change: Transition) -> Transition:
        """`change`, with the execution put in the `open` index when it sets when the watchdog
        looks (`check_at`): a claim creates its executions outside the index, and the first
        writer that asks the watchdog to look puts it there."""
        if "check_at" not in change.set or "open_shard" in change.set:
            return change
        shard = open_shard_of(execution_id, self.open_shards)
        return replace(change, set={**change.set, "open_shard": shard})

    def _with_attention(self, tenant_id: str, execution_id: str, change: Transition) -> Transition:
        """`change` plus the attention index attributes its new state calls for."""
        if "state" not in change.set:
            return change
        state = ExecState(change.set["state"])
        if state not in ATTENTION_STATES:
            return replace(change, remove=(*change.remove, *_ATTENTION_ATTRS))
        finished = change.set.get("finished_at")
        # Newest death first; a change that does not say when it finished sorts by its
        # occurrence, which every execution id carries.
        at = parse_time(finished) if isinstance(finished, str) else scheduled_of(execution_id)
        shard = open_shard_of(execution_id, self.open_shards)
        return replace(
            change,
            set={
                **change.set,
                "attention_key": attention_key(tenant_id, state, shard),
                "attention_at": f"{to_ms(at):013d}#{execution_id}",
            },
        )

    def needing_attention(
        self,
        tenant_id: str,
        state: ExecState,
        *,
        limit: int,
        cursor: str | None,
        on_unreadable: Unreadable | None = None,
    ) -> tuple[list[ExecutionRecord], str | None]:
        """A page of the tenant's executions in `state` (dead or failed), newest first; one
        that cannot be read goes to `on_unreadable` and is left out of the page.

        Each shard of the index is read newest first from the cursor down, and the pages are
        merged; the cursor is the sort key of the last execution returned. The index is
        eventually consistent, so an execution re-run a moment ago may still be listed.
        """
        before = checked_cursor(cursor, ATTENTION_CURSOR)
        found: list[dict[str, Any]] = []
        more = False
        for shard in range(self.open_shards):
            condition = "attention_key = :k"
            values: dict[str, Any] = {":k": {"S": attention_key(tenant_id, state, shard)}}
            if before is not None:
                condition += " AND attention_at < :before"
                values[":before"] = {"S": before}
            resp = self._db.query(
                TableName=self._table,
                IndexName=ATTENTION_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                ScanIndexForward=False,
                Limit=limit,
            )
            found.extend(resp.get("Items", []))
            more = more or "LastEvaluatedKey" in resp
        found.sort(key=lambda item: item["attention_at"]["S"], reverse=True)
        page = found[:limit]
        next_cursor = None
        if page and (more or len(found) > limit):
            next_cursor = page[-1]["attention_at"]["S"]
        return readable(page, execution_record, EXECUTION_KEY, on_unreadable), next_cursor

    def count_needing_attention(self, tenant_id: str, state: ExecState) -> int:
        """How many of the tenant's executions are in `state` (dead or failed)."""
        total = 0
        for shard in range(self.open_shards):
            kwargs: dict[str, Any] = {
                "TableName": self._table,
                "IndexName": ATTENTION_INDEX,
                "KeyConditionExpression": "attention_key = :k",
                "ExpressionAttributeValues": {":k": {"S": attention_key(tenant_id, state, shard)}},
                "Select": "COUNT",
            }
            while True:
                resp = self._db.query(**kwargs)
                total += resp.get("Count", 0)
                if "LastEvaluatedKey" not in resp:
                    break
                kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return total

    def record_fenced(self, tenant_id: str, execution_id: str) -> None:
        """Count a stale report that was rejected; the report itself is never applied. An
        execution that is gone (expired from the history) has nothing to count on."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=self.key(tenant_id, execution_id),
                UpdateExpression="ADD fenced_reports :one",
                ConditionExpression="attribute_exists(sk)",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def list_for_job(
        self,
        tenant_id: str,
        job_id: str,
        *,
        limit: int,
        cursor: str | None,
        on_unreadable: Unreadable | None = None,
    ) -> tuple[list[ExecutionRecord], str | None]:
        """A page of a job's history, newest first; an execution that cannot be read goes to
        `on_unreadable` and is left out of the page."""
        pk = job_key(tenant_id, job_id)
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "job_key = :k",
            "ExpressionAttributeValues": {":k": {"S": pk}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        start = checked_cursor(cursor, EXECUTION_CURSOR)
        if start:
            kwargs["ExclusiveStartKey"] = {"job_key": {"S": pk}, "sk": {"S": start}}
        resp = self._db.query(**kwargs)
        records = readable(resp.get("Items", []), execution_record, EXECUTION_KEY, on_unreadable)
        last = resp.get("LastEvaluatedKey")
        return records, (last["sk"]["S"] if last else None)

    def newest_ended_after(
        self, tenant_id: str, job_id: str, execution_id: str | None, *, consistent: bool
    ) -> ExecutionRecord | None:
        """The job's newest execution later than `execution_id` (any, with None) that has
        ended (None when none has): a success the job's `last_*` do not name
        (`Lifecycle._note_outcome` skips noting a success that changes nothing else). Reads
        newest first, so the newest ended one is on the first page unless many newer runs are
        still pending or running."""
        values: dict[str, Any] = {
            ":k": {"S": job_key(tenant_id, job_id)},
            **{f":t{i}": {"S": state} for i, state in enumerate(ENDED)},
        }
        condition = "job_key = :k"
        if execution_id is not None:
            condition += " AND sk > :after"
            values[":after"] = {"S": execution_key(execution_id)[1]}
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "FilterExpression": "#s IN (" + ", ".join(f":t{i}" for i in range(len(ENDED))) + ")",
            "ExpressionAttributeNames": {"#s": "state"},
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "ConsistentRead": consistent,
        }
        while True:
            resp = self._db.query(**kwargs)
            for item in resp.get("Items", []):
                return execution_record(item)
            if "LastEvaluatedKey" not in resp:
                return None
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def first_queued(self, tenant_id: str, job_id: str) -> ExecutionRecord | None:
        """The oldest execution of a job waiting for its overlap slot."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "job_key = :k",
            "FilterExpression": "#s = :q",
            "ExpressionAttributeNames": {"#s": "state"},
            "ExpressionAttributeValues": {
                ":k": {"S": job_key(tenant_id, job_id)},
                ":q": {"S": ExecState.QUEUED.value},
            },
            "ConsistentRead": True,
        }
        while True:
            resp = self._db.query(**kwargs)
            if resp.get("Items"):
                return execution_record(resp["Items"][0])
            if "LastEvaluatedKey" not in resp:
                return None
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def watched(self, refs: Sequence[ExecutionRef]) -> Watched:
        """Those of `refs` that have not ended and are outside the `open` index (what a watch
        list's check puts there), and those not written at all. Eventually consistent reads
        (half a unit each): checked well after their creation, and the writes that follow are
        conditional anyway."""
        unended: list[ExecutionRef] = []
        keys: dict[tuple[str, str], ExecutionRef] = {}
        for ref in refs:
            try:
                keys[self._key_text(ref)] = ref
            except ValueError:
                logger.warning("watch list names no execution", execution_id=ref.execution_id)
        items = batch_get(
            self._db,
            self._table,
            [{"job_key": {"S": pk}, "sk": {"S": sk}} for pk, sk in keys],
            ProjectionExpression="job_key, sk, #s, open_shard",
            ExpressionAttributeNames={"#s": "state"},
        )
        unwritten = dict(keys)
        for item in items:
            listed = unwritten.pop((item["job_key"]["S"], item["sk"]["S"]), None)
            state = item.get("state", {}).get("S")
            if "open_shard" in item or state is None or state in ENDED:
                continue
            if listed is not None:
                unended.append(listed)
        return Watched(unended, list(unwritten.values()))

    def _key_text(self, ref: ExecutionRef) -> tuple[str, str]:
        key = self.key(ref.tenant_id, ref.execution_id)
        return key["job_key"]["S"], key["sk"]["S"]

    def watch_open(self, ref: ExecutionRef, check_at_ms: int) -> bool:
        """Put an execution that has not ended into the `open` index at `check_at_ms` (a watch
        list's check found it open); False when it ended, is indexed already or is gone."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=self.key(ref.tenant_id, ref.execution_id),
                UpdateExpression="SET open_shard = :s, check_at = :c",
                ConditionExpression=(
                    "attribute_exists(sk) AND attribute_not_exists(open_shard)"
                    " AND NOT #s IN (" + ", ".join(f":t{i}" for i in range(len(ENDED))) + ")"
                ),
                ExpressionAttributeNames={"#s": "state"},
                ExpressionAttributeValues={
                    ":s": {"S": open_shard_of(ref.execution_id, self.open_shards)},
                    ":c": {"N": str(check_at_ms)},
                    **{f":t{i}": {"S": state} for i, state in enumerate(ENDED)},
                },
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def leave_open_index(self, job_key: str, sk: str) -> None:
        """Take an item out of the `open` index by its raw key, whatever it holds: one the
        watchdog cannot read is parked in quarantine, not met again on every sweep."""
        self._db.update_item(
            TableName=self._table,
            Key={"job_key": {"S": job_key}, "sk": {"S": sk}},
            UpdateExpression="REMOVE open_shard, check_at",
            ConditionExpression="attribute_exists(sk)",
        )

    def reopen(self, job_key: str, sk: str, shard: str, check_at_ms: int) -> bool:
        """Put a parked item back in the `open` index (its quarantine record cleared), so the
        watchdog reads it on its next sweep; False when the item is gone."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"job_key": {"S": job_key}, "sk": {"S": sk}},
                UpdateExpression="SET open_shard = :s, check_at = :c",
                ConditionExpression="attribute_exists(sk)",
                ExpressionAttributeValues={":s": {"S": shard}, ":c": {"N": str(check_at_ms)}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def open_candidates(self, shard: str, until_ms: int, limit: int = 500) -> list[OpenCandidate]:
        """Executions whose `check_at` has passed in one shard of the open index.

        The index is eventually consistent: these are candidates, and every action on one is a
        conditional write on the base item after a consistent read.
        """
        resp = self._db.query(
            TableName=self._table,
            IndexName=OPEN_INDEX,
            KeyConditionExpression="open_shard = :s AND check_at <= :u",
            ExpressionAttributeValues={":s": {"S": shard}, ":u": {"N": str(until_ms)}},
            Limit=limit,
        )
        return [
            OpenCandidate(
                job_key=item["job_key"]["S"],
                sk=item["sk"]["S"],
                tenant_id=item.get("tenant_id", {}).get("S"),
                execution_id=item.get("execution_id", {}).get("S"),
            )
            for item in resp.get("Items", [])
        ]


def _plain_value(value: Any) -> Any:
    if isinstance(value, ExecState):
        return value.value
    return value


def _fence(change: Transition, names: dict[str, str], values: dict[str, Any]) -> str:
    """The condition of `change`: the item exists, holds every expected value (one of them,
    for a tuple) and lacks every attribute expected absent; adds the names and values it uses."""
    conditions = ["attribute_exists(sk)"]
    for i, (attr, expected) in enumerate(change.expect.items()):
        names[f"#e{i}"] = attr
        options = expected if isinstance(expected, tuple) else (expected,)
        placeholders = []
        for j, option in enumerate(options):
            values[f":e{i}_{j}"] = to_attr_map({"v": _plain_value(option)})["v"]
            placeholders.append(f":e{i}_{j}")
        if len(placeholders) == 1:
            conditions.append(f"#e{i} = {placeholders[0]}")
        else:
            conditions.append(f"#e{i} IN ({', '.join(placeholders)})")
    for i, attr in enumerate(change.expect_absent):
        names[f"#x{i}"] = attr
        conditions.append(f"attribute_not_exists(#x{i})")
    return " AND ".join(conditions)


def _update_expression(change: Transition, names: dict[str, str], values: dict[str, Any]) -> str:
    """The update of `change` (SET, REMOVE, ADD); adds the names and values it uses."""
    sets = []
    for i, (attr, value) in enumerate(change.set.items()):
        names[f"#s{i}"] = attr
        values[f":s{i}"] = to_attr_map({"v": _plain_value(value)})["v"]
        sets.append(f"#s{i} = :s{i}")
    for i, (attr, value) in enumerate(change.set_if_absent.items()):
        names[f"#n{i}"] = attr
        values[f":n{i}"] = to_attr_map({"v": _plain_value(value)})["v"]
        sets.append(f"#n{i} = if_not_exists(#n{i}, :n{i})")
    if change.append_attempt is not None:
        values[":att"] = to_attr_map({"v": [change.append_attempt]})["v"]
        values[":empty"] = {"L": []}
        sets.append("attempts = list_append(if_not_exists(attempts, :empty), :att)")
    parts = []
    if sets:
        parts.append("SET " + ", ".join(sets))
    if change.remove:
        for i, attr in enumerate(change.remove):
            names[f"#r{i}"] = attr
        parts.append("REMOVE " + ", ".join(f"#r{i}" for i in range(len(change.remove))))
    if change.add:
        adds = []
        for i, (attr, amount) in enumerate(change.add.items()):
            names[f"#a{i}"] = attr
            values[f":a{i}"] = {"N": str(amount)}
            adds.append(f"#a{i} :a{i}")
        parts.append("ADD " + ", ".join(adds))
    return " ".join(parts)
