"""Stop moto's server from keeping every model object it ever made, for the local runtime and
the tests only.

Every moto model class (`moto.core.common_models.BaseModel`) appends each instance it creates to
a class-wide list, `instances_tracked`, that nothing empties while the server runs (only
`reset_model_data`, on a mock's start or stop, does). DynamoDB's `Query` and `Scan` deep-copy
every item they return, and each copy is a new `Item`: so every listing kept its items alive for
ever (400 listings of 200 jobs added about 292 MB to `takt local`, a 2,000-task fan-out about
1 GB). The list's only readers, moto's `/moto-api/data.json` and S3's reset, iterate it to find
the objects still in use, so weak references answer them the same for every object something
else still holds. Here `BaseModel.__new__` records each instance in such a weak collection
instead, converting a class's list the first time the class makes an instance (classes load
lazily, and a reset puts plain lists back).

moto's DynamoDB Streams backend also keeps every shard iterator it hands out, in a dict nothing
empties, and `GetRecords` hands out a new one on every call (each about 2 KB): the local runtime's
stream reader polls the jobs table's stream several times a second, so an idle `takt local` grew
by megabytes an hour. DynamoDB expires a shard iterator 15 minutes after it is returned; here
moto forgets it then too (`IteratorExpiry`), and a reader using the newest iterator never sees the
difference. Nothing here is shipped in the Lambda layer.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

# DynamoDB Streams: "A shard iterator expires 15 minutes after it is returned to the requester."
ITERATOR_LIFETIME_SEC = 15 * 60


class WeakInstances:
    """A model class's live instances: what moto's `instances_tracked` list offers its readers
    (`append`, iteration, `len`), holding none of them alive. They are keyed by identity, since
    some models (DynamoDB's `Item`) define equality and so cannot be hashed."""

    def __init__(self, instances: Iterable[Any] = ()) -> None:
        self._live: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
        for instance in instances:
            self.append(instance)

    def append(self, instance: Any) -> None:
        self._live[id(instance)] = instance

    def __iter__(self) -> Iterator[Any]:
        return iter(list(self._live.values()))

    def __len__(self) -> int:
        return len(self._live)


class IteratorExpiry:
    """When each shard iterator was handed out (and by which streams backend), oldest first, to
    forget those past their lifetime from their backend's `shard_iterators`."""

    def __init__(self, clock: Callable[[], float], lifetime_sec: float = ITERATOR_LIFETIME_SEC):
        self._clock = clock
        self._lifetime = lifetime_sec
        self._issued: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def issued(self, backend: Any, arn: str) -> None:
        """Record `arn` as handed out by `backend` now, and forget every iterator past its
        lifetime."""
        now = self._clock()
        with self._lock:
            self._issued[arn] = (now, backend)
            while self._issued:
                oldest, (at, owner) = next(iter(self._issued.items()))
                if now - at <= self._lifetime:
                    break
                del self._issued[oldest]
                owner.shard_iterators.pop(oldest, None)


# The expiry the patched streams backend reports to (a test may put one on a manual clock here).
EXPIRY = IteratorExpiry(time.monotonic)


def _patch_stream_iterators() -> None:
    from moto.dynamodbstreams.models import DynamoDBStreamsBackend  # noqa: PLC0415 - moto's internals load only with the local runtime

    if getattr(DynamoDBStreamsBackend.get_records, "_takt", False):
        return
    get_shard_iterator = DynamoDBStreamsBackend.get_shard_iterator
    get_records = DynamoDBStreamsBackend.get_records

    def handed_out(self: Any, *args: Any, **kwargs: Any) -> Any:
        iterator = get_shard_iterator(self, *args, **kwargs)
        EXPIRY.issued(self, iterator.arn)
        return iterator

    def read(self: Any, iterator_arn: str, limit: int) -> dict[str, Any]:
        answer = get_records(self, iterator_arn, limit)
        EXPIRY.issued(self, answer["NextShardIterator"])
        return answer

    read._takt = True  # type: ignore[attr-defined]
    DynamoDBStreamsBackend.get_shard_iterator = handed_out  # type: ignore[method-assign]
    DynamoDBStreamsBackend.get_records = read  # type: ignore[method-assign]


def apply() -> None:
    """Make every moto model class track its instances weakly, and expire shard iterators as
    DynamoDB does (idempotent)."""
    from moto.core.common_models import BaseModel  # noqa: PLC0415 - moto's internals load only with the local runtime

    _patch_stream_iterators()
    if getattr(BaseModel.__new__, "_takt", False):
        return

    def tracked_weakly(cls: Any, *args: Any, **kwargs: Any) -> Any:
        instance = super(BaseModel, cls).__new__(cls)
        tracked = cls.instances_tracked
        if not isinstance(tracked, WeakInstances):
            tracked = WeakInstances(tracked)
            cls.instances_tracked = tracked
        tracked.append(instance)
        return instance

    tracked_weakly._takt = True  # type: ignore[attr-defined]
    BaseModel.__new__ = staticmethod(tracked_weakly)  # type: ignore[method-assign]
