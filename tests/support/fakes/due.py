"""The due table in memory: its (minute bucket, shard) partitions (`ClaimerDue`) and the claims'
watch lists (`ClaimWatches`, `SweptWatches`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from takt.models.ids import from_ms, to_ms
from takt.store.due import bucket_name, minute_of, shard_of
from takt.store.ports import DueItem, ExecutionRef, FairRead, UnreadableDue, Watch
from takt.store.watches import PREFIX, READ_LIMIT, watch_partitions

Item = dict[str, Any]


class FakeWatches:
    """Watch lists by partition, each checked at its time and deleted when done."""

    def __init__(self, due_shards: int) -> None:
        self.shards = watch_partitions(due_shards)
        self.lists: dict[tuple[str, str], Watch] = {}

    def add(self, due_shard: int, check_at_ms: int, executions: Sequence[ExecutionRef]) -> None:
        bucket = f"{PREFIX}{due_shard % self.shards:03d}"
        key = f"{check_at_ms:013d}#{len(self.lists):08d}"
        self.lists[(bucket, key)] = Watch(bucket, key, from_ms(check_at_ms), tuple(executions))

    def due(self, shard: int, until: datetime) -> list[Watch]:
        bucket = f"{PREFIX}{shard:03d}"
        found = sorted(
            (key, watch)
            for (b, key), watch in self.lists.items()
            if b == bucket and watch.check_at <= until
        )
        return [watch for _, watch in found[:READ_LIMIT]]

    def done(self, watch: Watch) -> None:
        self.lists.pop((watch.bucket, watch.watch_key), None)

    def listed(self) -> list[str]:
        """The execution ids every list still holds, in check order."""
        return [ref.execution_id for _, w in sorted(self.lists.items()) for ref in w.executions]


class FakeDue:
    """Due items keyed by (bucket, due key) as `DueStore` writes them; a read of a partition is
    consistent and complete, and `delete_if_unchanged` is conditional on `written_ms`."""

    def __init__(self, shards: int = 1) -> None:
        self.shards = shards
        self.items: dict[tuple[str, str], Item] = {}
        self.watches = FakeWatches(shards)

    def put(self, tenant_id: str, job_id: str, due: datetime, now: datetime) -> None:
        minute = max(minute_of(due), minute_of(now))
        bucket = f"{bucket_name(minute)}#{shard_of(tenant_id, job_id, self.shards):03d}"
        due_key = f"{to_ms(due):013d}#{tenant_id}#{job_id}"
        self.items[(bucket, due_key)] = {
            "bucket": {"S": bucket},
            "due_key": {"S": due_key},
            "written_ms": {"N": str(to_ms(now))},
        }

    def indexed(self, tenant_id: str, job_id: str) -> list[datetime]:
        """The due times the index holds for one job, oldest first."""
        suffix = f"#{tenant_id}#{job_id}"
        return sorted(
            from_ms(int(key.split("#", 1)[0])) for _, key in self.items if key.endswith(suffix)
        )

    def read_due(self, minute: datetime, shard: int, until: datetime) -> FairRead:
        bucket = f"{bucket_name(minute)}#{shard:03d}"
        high = f"{to_ms(until):013d}~"
        items: list[DueItem] = []
        unreadable: list[UnreadableDue] = []
        for (b, key), item in sorted(self.items.items()):
            if b != bucket or key > high:
                continue
            try:
                items.append(DueItem.from_item(item))
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                unreadable.append(UnreadableDue(b, key, exc))
        return FairRead(items, frozenset(), tuple(unreadable))

    def read_fair(
        self, minute: datetime, shard: int, until: datetime, page: int, pages: int
    ) -> FairRead:
        """Not modelled: a bounded claim's paging is the DynamoDB store's own logic, which its
        moto tests hold (tests/integration/test_fairness_*)."""
        raise NotImplementedError("bounded claims (claim_max_items) are tested on moto")

    def delete_if_unchanged(self, item: DueItem) -> bool:
        stored = self.items.get((item.bucket, item.due_key))
        if stored is None or stored.get("written_ms") != {"N": str(item.written_ms)}:
            return False
        del self.items[(item.bucket, item.due_key)]
        return True

    def delete_raw(self, bucket: str, due_key: str) -> None:
        self.items.pop((bucket, due_key), None)
