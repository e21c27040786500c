"""Quarantine: where an item that cannot be read or written is parked for an operator.

DESIGN invariant 9: one bad record must not stop anyone else. The claimer, the watchdog, the
indexer, the reconciler and the API's listings each catch a *record fault* (`is_record_fault`:
the item cannot be parsed, or DynamoDB refuses the write as invalid, e.g. over 400 KB), park the
item here, count it (`Quarantined`) and go on with the rest. A transient fault (throttling, a
timeout, a lost connection) is never a record fault: it still fails the step, which is retried.

The records live in the tenants table, in a partition of their own (`QUARANTINE_PARTITION`):

- its key is one partition key, which no tenant id can be (tenant ids never hold `#`), so IAM
  can single it out: the API's own role may reach that partition and nothing else of the table
  (`dynamodb:LeadingKeys`), and a tenant's session can never read it, though the records name
  other tenants' keys and errors;
- the claimer and the watchdog already write the tenants table, so only the indexer needs a new
  grant, where the due table (the other table no tenant reaches) would need one for the API and
  the watchdog;
- quarantine is rare and bounded (one record per bad item, however often it is met: the id is a
  hash of the item's table and key), so one partition holds it and a listing is one query.

A record names the item's table and key, where it was met, the error, when it was first and last
met and how often, and what clearing it puts back (`restore`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError

from takt.models.ids import format_time
from takt.observability import MetricUnit, add_metric, logger
from takt.store.errors import NotFoundError, is_condition_failure, is_record_fault

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

QUARANTINE_PARTITION = "#quarantine"
"""The tenants table's partition of quarantine records (`#` is in no tenant id)."""
QUARANTINED_METRIC = "Quarantined"
# An error's text is kept to this many characters: enough to repair from, never near 400 KB.
ERROR_CHARS = 1000


def quarantine_id(table: str, key: Mapping[str, str]) -> str:
    """The record's id: the same item met again, anywhere, updates the same record."""
    text = json.dumps({"table": table, "key": dict(key)}, sort_keys=True)
    return "q_" + hashlib.sha256(text.encode()).hexdigest()[:20]


Unreadable = Callable[[dict[str, str], Exception], None]
"""What a listing does with an item it cannot read: given the item's key and why."""

T = TypeVar("T")


def readable(
    items: Iterable[Mapping[str, Any]],
    parse: Callable[[Any], T],
    key_names: tuple[str, str],
    on_unreadable: Unreadable | None,
) -> list[T]:
    """The items `parse` reads; one it cannot read is handed to `on_unreadable` (with its key)
    and left out, so one bad item does not fail a listing of the others. Without
    `on_unreadable` the fault is raised, as before."""
    out: list[T] = []
    for item in items:
        try:
            out.append(parse(item))
        except Exception as exc:
            if on_unreadable is None or not is_record_fault(exc):
                raise
            on_unreadable({name: str(item.get(name, {}).get("S", "")) for name in key_names}, exc)
    return out


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]


@dataclass(frozen=True)
class QuarantineRecord:
    """One parked item: `table` and `key` say which, `where` who met it last."""

    id: str
    table: str
    key: dict[str, str]
    where: str
    error: str
    first_at: str
    last_at: str
    seen: int
    tenant_id: str | None = None
    # What clearing puts back on the item (the open index's shard of an execution).
    restore: dict[str, str] | None = None

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> QuarantineRecord:
        def text(name: str) -> str | None:
            value = item.get(name)
            return None if value is None else str(value["S"])

        restore = text("restore")
        return cls(
            id=str(item["counter"]["S"]),
            table=text("table") or "",
            key=json.loads(text("key") or "{}"),
            where=text("where") or "",
            error=text("error") or "",
            first_at=text("first_at") or "",
            last_at=text("last_at") or "",
            seen=int(item.get("seen", {}).get("N", "1")),
            tenant_id=text("owner"),
            restore=json.loads(restore) if restore else None,
        )


class QuarantineStore:
    """The quarantine partition of the tenants table."""

    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def park(
        self,
        *,
        table: str,
        key: Mapping[str, str],
        where: str,
        error: BaseException,
        now: datetime,
        tenant_id: str | None = None,
        restore: Mapping[str, str] | None = None,
    ) -> str:
        """Record (or note again) an item met at `where` that failed with `error`; its id.

        Never raises: a parking place that cannot be written must not stop the caller either.
        The item is then only logged and counted, and met again on the next pass.
        """
        record_id = quarantine_id(table, key)
        add_metric(QUARANTINED_METRIC, MetricUnit.Count, 1)
        logger.error(
            "record quarantined",
            quarantine_id=record_id,
            table=table,
            key=dict(key),
            where=where,
            error=error_text(error),
        )
        values: dict[str, Any] = {
            ":t": {"S": table},
            ":k": {"S": json.dumps(dict(key), sort_keys=True)},
            ":w": {"S": where},
            ":e": {"S": error_text(error)},
            ":now": {"S": format_time(now)},
            ":one": {"N": "1"},
        }
        update = (
            "SET #t = :t, #k = :k, #w = :w, #e = :e, last_at = :now, "
            "first_at = if_not_exists(first_at, :now)"
        )
        if tenant_id is not None:
            values[":o"] = {"S": tenant_id}
            update += ", #o = :o"
        if restore:
            values[":r"] = {"S": json.dumps(dict(restore), sort_keys=True)}
            update += ", #r = if_not_exists(#r, :r)"
        names = {"#t": "table", "#k": "key", "#w": "where", "#e": "error"}
        if tenant_id is not None:
            names["#o"] = "owner"
        if restore:
            names["#r"] = "restore"
        try:
            self._db.update_item(
                TableName=self._table,
                Key=_key(record_id),
                UpdateExpression=update + " ADD seen :one",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except Exception:  # noqa: BLE001 - see the docstring: parking never stops the caller
            logger.exception("quarantine record not written", quarantine_id=record_id)
        return record_id

    def list(self, *, limit: int = 1000) -> list[QuarantineRecord]:
        """Every record, oldest id first (bounded: quarantine is rare)."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "tenant_id = :p",
            "ExpressionAttributeValues": {":p": {"S": QUARANTINE_PARTITION}},
            "ConsistentRead": True,
        }
        records: list[QuarantineRecord] = []
        while len(records) < limit:
            resp = self._db.query(**kwargs, Limit=limit - len(records))
            records.extend(QuarantineRecord.from_item(i) for i in resp.get("Items", []))
            if "LastEvaluatedKey" not in resp:
                break
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return records

    def get(self, record_id: str) -> QuarantineRecord:
        resp = self._db.get_item(TableName=self._table, Key=_key(record_id), ConsistentRead=True)
        if "Item" not in resp:
            raise NotFoundError(record_id)
        return QuarantineRecord.from_item(resp["Item"])

    def drop(self, record: QuarantineRecord) -> bool:
        """Delete the record unless it was met again since it was read (False then)."""
        try:
            self._db.delete_item(
                TableName=self._table,
                Key=_key(record.id),
                ConditionExpression="seen = :seen",
                ExpressionAttributeValues={":seen": {"N": str(record.seen)}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True


def _key(record_id: str) -> dict[str, Any]:
    return {"tenant_id": {"S": QUARANTINE_PARTITION}, "counter": {"S": record_id}}
