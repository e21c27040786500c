"""The executions table in memory: `RunnerExecutions` and `WatchdogExecutions` (and so
`LifecycleExecutions`), with the sparse `open` index the watchdog reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from takt.models.ids import execution_key
from takt.models.records import ExecState, ExecutionRecord, job_key
from takt.store.errors import ExecutionConflictError, NotFoundError
from takt.store.executions import ENDED, open_shard_of
from takt.store.items import execution_item, execution_record, to_attr_map
from takt.store.ports import ExecutionRef, OpenCandidate, Transition, Watched

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Item = dict[str, Any]
Key = tuple[str, str]
RETENTION_SEC = 86_400


def _typed(value: Any) -> Any:
    plain = value.value if isinstance(value, ExecState) else value
    return to_attr_map({"v": plain})["v"]


def _key(tenant_id: str, execution_id: str) -> Key:
    """The table key of an execution id; NotFoundError for an id that is not one of ours, as
    `ExecutionStore.get` answers it."""
    try:
        partition, sk = execution_key(execution_id)
    except ValueError as exc:
        raise NotFoundError(execution_id) from exc
    return job_key(tenant_id, partition), sk


def _condition_failed(operation: str) -> ClientError:
    """The error botocore raises for a conditional write the store does not catch."""
    return ClientError(
        {"Error": {"Code": "ConditionalCheckFailedException", "Message": "condition failed"}},
        operation,
    )


class FakeExecutions:
    """Executions as items keyed by (job key, occurrence token), as the table keys them.

    `transition` evaluates a `Transition` as DynamoDB evaluates the update `ExecutionStore`
    builds from it: the item must exist (else NotFoundError), every `expect` must hold (one of
    a tuple's values), no `expect_absent` attribute may exist, else ExecutionConflictError with
    the execution as it is (`ALL_OLD`); a change that sets `check_at` puts the execution in the
    `open` index, as the store adds its `open_shard`. The `attention` index's attributes are
    not kept: no engine decides by them. `before_create` and `before_transition` run first in
    those writes, for a test to race another actor in there or to fail the write.
    """

    def __init__(self, open_shards: int = 4) -> None:
        self.open_shards = open_shards
        self.retention_sec = RETENTION_SEC
        self.table = "executions"
        self.items: dict[Key, Item] = {}
        self.before_create: Callable[[ExecutionRecord], None] | None = None
        self.before_transition: Callable[[str, Transition], None] | None = None

    @property
    def client(self) -> DynamoDBClient:
        """Not modelled: the workflow runs' and backfills' stores build on the table's client,
        and their items are not kept here; they are tested on moto."""
        raise NotImplementedError("workflow runs and backfills are tested on moto")

    # What tests read and plant

    def all(self) -> list[ExecutionRecord]:
        """Every execution, oldest occurrence first."""
        return [execution_record(item) for _, item in sorted(self.items.items())]

    def attr(self, record: ExecutionRecord, name: str) -> Any:
        """One attribute of the stored item as a plain value (None when absent)."""
        value = self._item(record.tenant_id, record.execution_id).get(name)
        if value is None:
            return None
        if "N" in value:
            return int(value["N"])
        return value.get("S", value.get("BOOL"))

    def plant(self, key: Key, item: Item) -> None:
        """Write a raw item, as another writer (or a corruption) left it."""
        self.items[key] = item

    def _item(self, tenant_id: str, execution_id: str) -> Item:
        try:
            return self.items[_key(tenant_id, execution_id)]
        except KeyError:
            raise NotFoundError(execution_id) from None

    # ExecutionWriter

    def get(self, tenant_id: str, execution_id: str, *, consistent: bool = True) -> ExecutionRecord:
        return execution_record(self._item(tenant_id, execution_id))

    def create(
        self, record: ExecutionRecord, *, check_at_ms: int | None, region_epoch: int | None = None
    ) -> bool:
        """`attribute_not_exists(sk)`: False when the occurrence's execution exists."""
        if self.before_create is not None:
            self.before_create(record)
        key = _key(record.tenant_id, record.execution_id)
        if key in self.items:
            return False
        shard = (
            None
            if record.state.terminal or check_at_ms is None
            else open_shard_of(record.execution_id, self.open_shards)
        )
        self.items[key] = execution_item(
            record,
            open_shard=shard,
            check_at=None if shard is None else check_at_ms,
            expires_at=int(record.created_at.timestamp()) + self.retention_sec,
        )
        if region_epoch is not None:
            self.items[key]["region_epoch"] = {"N": str(region_epoch)}
        return True

    # LifecycleExecutions

    def transition(self, tenant_id: str, execution_id: str, change: Transition) -> ExecutionRecord:
        if self.before_transition is not None:
            self.before_transition(execution_id, change)
        item = self._item(tenant_id, execution_id)
        holds = all(
            item.get(attr) in [_typed(o) for o in (want if isinstance(want, tuple) else (want,))]
            for attr, want in change.expect.items()
        ) and not any(attr in item for attr in change.expect_absent)
        if not holds:
            raise ExecutionConflictError(
                f"execution {execution_id} changed", execution_record(item)
            )
        new = dict(item)
        if "check_at" in change.set and "open_shard" not in change.set:
            new["open_shard"] = _typed(open_shard_of(execution_id, self.open_shards))
        for attr, value in change.set.items():
            new[attr] = _typed(value)
        for attr, value in change.set_if_absent.items():
            new.setdefault(attr, _typed(value))
        if change.append_attempt is not None:
            earlier = new.get("attempts", {"L": []})["L"]
            new["attempts"] = {"L": [*earlier, _typed(change.append_attempt)]}
        for attr in change.remove:
            new.pop(attr, None)
        for attr, amount in change.add.items():
            new[attr] = {"N": str(int(new.get(attr, {"N": "0"})["N"]) + amount)}
        self.items[_key(tenant_id, execution_id)] = new
        return execution_record(new)

    def _of_job(self, tenant_id: str, job_id: str) -> list[tuple[str, Item]]:
        """The job's items by occurrence token, oldest first (one partition's query)."""
        partition = job_key(tenant_id, job_id)
        return sorted((sk, item) for (pk, sk), item in self.items.items() if pk == partition)

    def first_queued(self, tenant_id: str, job_id: str) -> ExecutionRecord | None:
        queued = [
            item
            for _, item in self._of_job(tenant_id, job_id)
            if item["state"]["S"] == ExecState.QUEUED.value
        ]
        return execution_record(queued[0]) if queued else None

    def newest_ended_after(
        self, tenant_id: str, job_id: str, execution_id: str | None, *, consistent: bool
    ) -> ExecutionRecord | None:
        after = "" if execution_id is None else execution_key(execution_id)[1]
        ended = [
            item
            for sk, item in self._of_job(tenant_id, job_id)
            if sk > after and item["state"]["S"] in ENDED
        ]
        return execution_record(ended[-1]) if ended else None

    # RunnerExecutions

    def record_fenced(self, tenant_id: str, execution_id: str) -> None:
        item = self.items.get(_key(tenant_id, execution_id))
        if item is not None:
            item["fenced_reports"] = {
                "N": str(int(item.get("fenced_reports", {"N": "0"})["N"]) + 1)
            }

    # WatchdogExecutions

    def open_candidates(self, shard: str, until_ms: int, limit: int = 500) -> list[OpenCandidate]:
        """The index's entries of `shard` due by `until_ms`, by `check_at`; consistent here,
        where the real index may lag (every action re-reads the item anyway)."""
        entries = sorted(
            (int(item["check_at"]["N"]), pk, sk, item)
            for (pk, sk), item in self.items.items()
            if item.get("open_shard") == {"S": shard}
            and "check_at" in item
            and int(item["check_at"]["N"]) <= until_ms
        )
        return [
            OpenCandidate(
                job_key=pk,
                sk=sk,
                tenant_id=item.get("tenant_id", {}).get("S"),
                execution_id=item.get("execution_id", {}).get("S"),
            )
            for _, pk, sk, item in entries[:limit]
        ]

    def watched(self, refs: Sequence[ExecutionRef]) -> Watched:
        unended, unwritten = [], []
        for ref in refs:
            try:
                item = self.items.get(_key(ref.tenant_id, ref.execution_id))
            except NotFoundError:
                continue  # the store logs a listed id that names no execution, and passes it
            state = None if item is None else item.get("state", {}).get("S")
            if item is None:
                unwritten.append(ref)
            elif "open_shard" not in item and state not in (None, *ENDED):
                unended.append(ref)
        return Watched(unended, unwritten)

    def watch_open(self, ref: ExecutionRef, check_at_ms: int) -> bool:
        item = self.items.get(_key(ref.tenant_id, ref.execution_id))
        if item is None or "open_shard" in item or item.get("state", {}).get("S") in ENDED:
            return False
        item["open_shard"] = {"S": open_shard_of(ref.execution_id, self.open_shards)}
        item["check_at"] = {"N": str(check_at_ms)}
        return True

    def leave_open_index(self, job_key: str, sk: str) -> None:
        item = self.items.get((job_key, sk))
        if item is None:
            raise _condition_failed("UpdateItem")
        item.pop("open_shard", None)
        item.pop("check_at", None)
