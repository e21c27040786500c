"""Make moto's server answer faster, for the local runtime and the tests only.

moto's server recomputes two things on every request that never change while it runs: the list
of its service modules (a directory listing) and the method names of each response class
(`inspect.getmembers`). Together they are about half of a request's CPU time in this process;
caching them changes no answer.

moto's DynamoDB `Query` also sorts every item of the table before it keeps the queried
partition's (`Table.all_items`), so a query costs O(n log n) in the table's size: about 180 ms
with 10,000 items, where DynamoDB reads one partition. The due index is queried several times a
second, so with 10,000 jobs stored this alone used more than a core. A base-table query here runs
moto's own `query` on a view of the table whose `all_items` holds only that partition, already
in the order moto would have produced; a query on an index skips the whole-table sort (moto sorts
the index's candidates itself). Results, paging and errors are moto's own.

moto's SQS `ReceiveMessage` checks each message's retention by building every attribute of the
queue, approximate message counts included (a scan of the queue per count), so a receive from a
queue holding n messages cost O(n) per message taken; here the check reads the one attribute it
needs. Its clock (`unix_time`, a naive-datetime round trip) is replaced by `time.time()` when it
is asked for "now", the same instant. moto's `TransactWriteItems` deep-copies every table it
names (O(n) in the table's items); here it checks all conditions before writing anything
instead. Its single-item writes check their condition and write with nothing between the two;
here they run one at a time (DynamoDB serializes the writes of an item), so two racing
conditional writes cannot both pass. Model objects are tracked weakly
(`takt_cli.local.moto_retention`), so a query's copies are freed once answered, and standard
queues serve their message groups round-robin, as SQS fair queues do
(`takt_cli.local.moto_fairqueues`). Nothing here is shipped in the Lambda layer.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from takt_cli.local import moto_fairqueues, moto_retention


@dataclass(frozen=True)
class _RangeQuery:
    """What a base-table query asks of its range key (moto's own arguments)."""

    comparison: str | None
    values: list[Any]
    limit: int | None
    exclusive_start_key: dict[str, Any] | None
    forward: bool


class _PartitionView:
    """The table, seen by one query: `all_items` is what that query can read, in moto's order."""

    def __init__(
        self, table: Any, hash_key: Any, index_name: str | None, query: _RangeQuery | None
    ) -> None:
        self._table = table
        self._hash_key = hash_key
        self._index_name = index_name
        self._query = query

    def all_items(self) -> list[Any]:
        table = self._table
        if self._index_name is not None:
            # Every candidate is sorted again by the index's keys in moto's `query`.
            return [item for partition in list(table.items.values()) for item in _each(partition)]
        partition = table.items.get(self._hash_key)
        if partition is None:
            return []
        if not table.range_key_attr:
            return [partition]
        items = list(partition.values())
        if self._query is not None and all(item.range_key.type == "S" for item in items):
            return _narrowed(items, self._query, table.range_key_attr)
        return sorted(items, key=lambda item: item.range_key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def _narrowed(items: list[Any], query: _RangeQuery, range_key_attr: str) -> list[Any]:
    """The items a query on string range keys can return, in key order: those its range
    condition keeps, after its start key, and of a limited query only as many as moto reads
    (one more than the limit, so moto still says whether more are left). moto checks each again;
    this only spares it comparing and sorting a whole partition for a page of a few items."""
    from moto.dynamodb.comparisons import get_comparison_func  # noqa: PLC0415 - moto's internals load only with the local runtime
    from moto.dynamodb.models.dynamo_type import DynamoType  # noqa: PLC0415 - moto's internals load only with the local runtime

    keyed = [(item.range_key.value, item) for item in items]
    if query.comparison is not None:
        test = get_comparison_func(query.comparison)
        bounds = [value.cast_value for value in query.values]
        keyed = [(key, item) for key, item in keyed if test(key, *bounds)]
    if query.exclusive_start_key is not None:
        start = DynamoType(query.exclusive_start_key[range_key_attr]).cast_value
        keyed = [
            (key, item) for key, item in keyed if (key > start if query.forward else key < start)
        ]
    keyed.sort(key=lambda pair: pair[0])
    if query.limit:
        keyed = keyed[: query.limit + 1] if query.forward else keyed[-(query.limit + 1) :]
    return [item for _, item in keyed]


def _each(partition: Any) -> list[Any]:
    return list(partition.values()) if isinstance(partition, dict) else [partition]


def _patch_sqs() -> None:
    import moto.sqs.models as sqs  # noqa: PLC0415 - moto's internals load only with the local runtime

    if getattr(sqs.SQSBackend.is_message_valid_based_on_retention_period, "_takt", False):
        return
    slow_unix_time = getattr(sqs, "unix_time")  # noqa: B009 - moto does not re-export it

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else float(slow_unix_time(dt))

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    def retained(self: Any, queue_name: str, message: Any) -> bool:
        period = int(self.get_queue(queue_name).message_retention_period)
        return bool(period + message.sent_timestamp / 1000 > unix_time())

    retained._takt = True  # type: ignore[attr-defined]
    setattr(sqs, "unix_time", unix_time)  # noqa: B010
    setattr(sqs, "unix_time_millis", unix_time_millis)  # noqa: B010
    sqs.SQSBackend.is_message_valid_based_on_retention_period = retained  # type: ignore[method-assign]


# One lock for every DynamoDB write: moto checks a condition on the item it read, then writes,
# with nothing between the two, so two requests on its threads could both pass one condition.
# Re-entrant: a transaction's writes are moto's single writes.
_writes = threading.RLock()


def _serialize_writes() -> None:
    """Run moto's single-item writes one at a time, as DynamoDB serializes the writes of one
    item: a conditional write (a lease, a rotation, a token taken) decides on the item as no
    other write can change it before it is made."""
    from moto.dynamodb.models import DynamoDBBackend  # noqa: PLC0415 - moto's internals load only with the local runtime

    for name in ("put_item", "update_item", "delete_item"):
        write = getattr(DynamoDBBackend, name)
        if not getattr(write, "_takt", False):
            setattr(DynamoDBBackend, name, _under_lock(write))


def _under_lock(write: Any) -> Any:
    @functools.wraps(write)
    def serialized(*args: Any, **kwargs: Any) -> Any:
        with _writes:
            return write(*args, **kwargs)

    serialized._takt = True  # type: ignore[attr-defined]
    return serialized


def _patch_transactions() -> None:
    """`TransactWriteItems` without moto's copy of every table it touches.

    moto deep-copies each table a transaction names, to roll back on failure: O(n) in the
    table's items (about 0.4 s a transaction with 5,000 jobs). Here every condition is checked
    first, against the items as they are, and the writes are made only when all hold, so a
    cancelled transaction writes nothing and needs no copy. Cancellation reasons, their order
    and `ALL_OLD` items are moto's. A transaction holds the lock of every write, as it would
    serialize with the other writes of its items in DynamoDB.
    """
    from moto.dynamodb.comparisons import get_filter_expression  # noqa: PLC0415 - moto's internals load only with the local runtime
    from moto.dynamodb.exceptions import (  # noqa: PLC0415 - moto's internals load only with the local runtime
        ConditionalCheckFailed,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )
    from moto.dynamodb.models import DynamoDBBackend  # noqa: PLC0415 - moto's internals load only with the local runtime

    if getattr(DynamoDBBackend.transact_write_items, "_takt", False):
        return

    def key_of(self: Any, op_type: str, op: dict[str, Any]) -> dict[str, Any]:
        if op_type != "Put":
            return dict(op["Key"])
        table = self.get_table(op["TableName"])
        key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
        if table.range_key_attr is not None:
            key[table.range_key_attr] = op["Item"][table.range_key_attr]
        return key

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        if len(transact_items) > 100:
            raise TooManyTransactionsException
        with _writes:
            seen: set[tuple[str, str]] = set()
            errors: list[tuple[Any, Any, Any]] = []
            for entry in transact_items:
                if len(entry) > 1:
                    raise TransactWriteSingleOpException
                op_type, op = next(iter(entry.items()))
                key = key_of(self, op_type, op)
                unique = (str(op["TableName"]), str(dict(sorted(key.items()))))
                if unique in seen:
                    raise MultipleTransactionsException
                seen.add(unique)
                current = self.get_item(op["TableName"], key)
                condition = op.get("ConditionExpression")
                if condition is not None and not get_filter_expression(
                    condition,
                    op.get("ExpressionAttributeNames"),
                    op.get("ExpressionAttributeValues"),
                ).expr(current):
                    old = None
                    if op.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD" and current:
                        old = current.to_json()["Attributes"]
                    errors.append(("ConditionalCheckFailed", ConditionalCheckFailed().message, old))
                else:
                    errors.append((None, None, None))
            if any(code is not None for code, _, _ in errors):
                raise TransactionCanceledException(errors)
            for entry in transact_items:
                op_type, op = next(iter(entry.items()))
                names = op.get("ExpressionAttributeNames")
                values = op.get("ExpressionAttributeValues")
                if op_type == "Put":
                    self.put_item(op["TableName"], op["Item"])
                elif op_type == "Delete":
                    self.delete_item(op["TableName"], op["Key"])
                elif op_type == "Update":
                    self.update_item(
                        op["TableName"],
                        op["Key"],
                        update_expression=op["UpdateExpression"],
                        expression_attribute_names=names,
                        expression_attribute_values=values,
                    )

    transact_write_items._takt = True  # type: ignore[attr-defined]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def apply() -> None:
    """Cache moto's per-request reflection, query one partition, take the cheap SQS paths, keep
    no model object alive for moto's own tracking, serve queues fairly, and silence the access
    log."""
    import moto.backends  # noqa: PLC0415 - moto's internals load only with the local runtime
    import moto.core.responses  # noqa: PLC0415 - moto's internals load only with the local runtime
    import moto.core.utils  # noqa: PLC0415 - moto's internals load only with the local runtime
    from moto.dynamodb.models.table import Table  # noqa: PLC0415 - moto's internals load only with the local runtime

    modules = tuple(moto.backends.list_of_moto_modules())
    moto.backends.list_of_moto_modules = lambda: iter(modules)
    cached = functools.lru_cache(maxsize=None)(moto.core.utils.method_names_from_class)
    setattr(moto.core.responses, "method_names_from_class", cached)  # noqa: B010
    if not getattr(Table.query, "_takt_partition_query", False):
        original: Any = Table.query

        @functools.wraps(original)
        def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
            index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
            narrow = None
            if (
                index_name is None
                and len(args) >= 5
                and len(kwargs.get("range_key_conditions") or []) <= 1
            ):
                comparison, values, limit, start, forward = args[:5]
                narrow = _RangeQuery(comparison, list(values or []), limit, start, forward)
            view = _PartitionView(self, hash_key, index_name, narrow)
            return original(view, hash_key, *args, **kwargs)

        query._takt_partition_query = True  # type: ignore[attr-defined]
        Table.query = query  # type: ignore[method-assign]
    _patch_sqs()
    _serialize_writes()
    _patch_transactions()
    moto_retention.apply()
    moto_fairqueues.apply()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
