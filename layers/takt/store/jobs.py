"""The jobs table: definitions keyed by (tenant, job id)."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from botocore.exceptions import ClientError

from takt.models.ids import format_time, to_ms
from takt.models.records import JobRecord, JobStatus, success_may_go_unnoted
from takt.resources import UNINDEXED_INDEX
from takt.store.batch import batch_get
from takt.store.errors import (
    ConflictError,
    NotFoundError,
    condition_failure_item,
    is_condition_failure,
    is_record_fault,
)
from takt.store.items import job_item, job_record
from takt.store.quarantine import Unreadable, readable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


# Paging cursors are the sort key a page ends at, written as is: the job id of a tenant's job
# list, the occurrence token of a job's history, the attention sort key of the dead or failed
# list. Every string of its pattern is a valid place to start (DynamoDB starts after a key that
# need not exist), so the API's OpenAPI document states exactly which cursors it accepts.
JOB_CURSOR = r"^job_[0-9a-z]{26}$"
EXECUTION_CURSOR = r"^[0-9]{8}T[0-9]{9}Z(?:m|-manual)?$"
ATTENTION_CURSOR = r"^[0-9]{13}#job_[0-9a-z]{26}\.[0-9]{8}T[0-9]{9}Z(?:m|-manual)?$"


def checked_cursor(cursor: str | None, pattern: str) -> str | None:
    """`cursor` if it is one of `pattern`'s (None for none); ValueError otherwise."""
    if not cursor:
        return None
    if not re.match(pattern, cursor):
        raise ValueError("malformed cursor")
    return cursor


@dataclass(frozen=True)
class JobOutline:
    """The few attributes of a job that counts and failure lists need."""

    job_id: str
    name: str | None
    status: str
    last_outcome: str | None
    last_run_at: str | None
    last_execution_id: str | None


# The job's attribute holding the id of its open incident of each kind (takt.notify).
INCIDENT_ATTRS = {"dead": "incident_dead", "stopped": "incident_stopped"}
# The outcomes that lengthen a job's failure streak.
FAILED_OUTCOMES = frozenset({"dead", "failed"})


@dataclass(frozen=True)
class OutcomeNote:
    """What noting an outcome found: after a dead or failed execution, the job as it is now
    (`job`) and its streak of such executions; after a succeeded one, no job and the streak
    ended. `incidents` are the job's open incidents (kind -> id): before a success, which it
    closed; after a failure, which are open still."""

    job: JobRecord | None
    failure_streak: int
    incidents: dict[str, str]


@dataclass(frozen=True)
class Advance:
    """What `JobStore.advance` did: `applied`, or not, and then the job as it now is in
    `current` (None when it was deleted)."""

    applied: bool
    current: JobRecord | None = None
    # The region epoch the job was last advanced at, when the advance was refused: above the
    # claim's own, a region that took the lease over has advanced it since (`region_epoch`).
    region_epoch: int | None = None


# The `unindexed` index's partitions: the markers of a burst of creates spread over them, and
# the reconciler reads each once a run.
UNINDEXED_SHARDS = 8


def needs_index(old: JobRecord | None, new: JobRecord) -> bool:
    """Whether an API write from `old` to `new` calls for a due item (the indexer's rule,
    `takt.dispatch.indexer.due_write`, on records): a new job, or one left active with a next
    run whose time or jitter moved, or made active again."""
    if new.status != JobStatus.ACTIVE or new.next_run_time is None:
        return False
    if old is None or old.status != JobStatus.ACTIVE:
        return True
    return (old.next_run_time, old.jitter) != (new.next_run_time, new.jitter)


def unindexed_marker(job: JobRecord) -> dict[str, Any]:
    """The attributes that put a job written by the API in the sparse `unindexed` index until
    its due item is written (by the indexer, or else the reconciler): a shard, and the write's
    time, which also tells this write's marker from a later one's."""
    shard = zlib.crc32(f"{job.tenant_id}#{job.job_id}".encode()) % UNINDEXED_SHARDS
    return {"unindexed": {"S": str(shard)}, "unindexed_at": {"N": str(to_ms(job.updated_at))}}


@dataclass(frozen=True)
class Unindexed:
    """A marker the reconciler found: the job, and the write time its marker holds."""

    tenant_id: str
    job_id: str
    marked_ms: int


# Fields whose stored attribute has another name (takt.store.items.job_item).
_STORED_AS = {"payload": "payload_json", "tasks": "tasks_z"}


class JobStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, tenant_id: str, job_id: str, *, consistent: bool = True) -> JobRecord:
        resp = self._db.get_item(
            TableName=self._table,
            Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
            ConsistentRead=consistent,
        )
        if "Item" not in resp:
            raise NotFoundError(job_id)
        return job_record(resp["Item"])

    def batch_get(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], JobRecord]:
        """Jobs by (tenant, job id), 100 at a time, strongly consistent; missing ones are absent."""
        found, unreadable = self.batch_read(keys)
        for error in unreadable.values():
            raise error
        return found

    def batch_read(
        self, keys: list[tuple[str, str]]
    ) -> tuple[dict[tuple[str, str], JobRecord], dict[tuple[str, str], Exception]]:
        """`batch_get`, with the jobs that cannot be read set apart (by key, with why) rather
        than raised, so one of them cannot fail the read of the others."""
        found: dict[tuple[str, str], JobRecord] = {}
        unreadable: dict[tuple[str, str], Exception] = {}
        unique = [{"tenant_id": {"S": t}, "job_id": {"S": j}} for t, j in dict.fromkeys(keys)]
        for item in batch_get(self._db, self._table, unique, ConsistentRead=True):
            key = (item["tenant_id"]["S"], item["job_id"]["S"])
            try:
                found[key] = job_record(item)
            except Exception as exc:
                if not is_record_fault(exc):
                    raise
                unreadable[key] = exc
        return found, unreadable

    def create(self, job: JobRecord) -> None:
        """Store a new job; ConflictError when the id is taken."""
        try:
            self._db.put_item(
                TableName=self._table,
                Item=job_item(job),
                ConditionExpression="attribute_not_exists(job_id)",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                raise ConflictError(f"job {job.job_id} exists") from exc
            raise

    def update_definition(
        self,
        job: JobRecord,
        expected_version: int,
        fields: set[str],
        *,
        mark_unindexed: bool = False,
    ) -> None:
        """Write the named attributes of `job` if its version is still `expected_version`.

        Only the attributes the caller changed are written: the scheduler moves `next_run_time`
        concurrently, and writing back a stale copy of it would point the job at an occurrence
        whose due item is already gone. `mark_unindexed` (the write moves the job's due item,
        `needs_index`) sets the job's `unindexed` marker in the same write.
        """
        item = job_item(job)
        names: dict[str, str] = {"#v": "version"}
        values: dict[str, Any] = {":expected": {"N": str(expected_version)}}
        sets, removes = ["#v = :version"], []
        values[":version"] = {"N": str(job.version)}
        if mark_unindexed:
            marker = unindexed_marker(job)
            sets.append("unindexed = :ui, unindexed_at = :uat")
            values[":ui"], values[":uat"] = marker["unindexed"], marker["unindexed_at"]
        for i, name in enumerate(sorted(fields - {"version"})):
            attr = _STORED_AS.get(name, name)
            names[f"#f{i}"] = attr
            if attr in item:
                values[f":f{i}"] = item[attr]
                sets.append(f"#f{i} = :f{i}")
            else:
                removes.append(f"#f{i}")
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": job.tenant_id}, "job_id": {"S": job.job_id}},
                UpdateExpression=update,
                ConditionExpression="attribute_exists(job_id) AND #v = :expected",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                if condition_failure_item(exc) is None:
                    raise NotFoundError(job.job_id) from exc
                raise ConflictError("version changed") from exc
            raise

    def clear_unindexed(self, tenant_id: str, job_id: str, marked_ms: int) -> bool:
        """Remove the job's `unindexed` marker if it is still the one set at `marked_ms` (a
        later write's marker stays, for its own indexing); False when it was not."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression="REMOVE unindexed, unindexed_at",
                ConditionExpression="unindexed_at = :at",
                ExpressionAttributeValues={":at": {"N": str(marked_ms)}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def mark_unindexed(self, tenant_id: str, job_id: str) -> bool:
        """Mark a job unindexed as of the epoch, whatever the item holds, so the reconciler's
        next run indexes it from the job as it then is (a quarantined job, cleared); False when
        the job is gone."""
        return self._set_unindexed(tenant_id, job_id, at_ms=0, unless_marked=False)

    def note_unindexed(self, tenant_id: str, job_id: str, at: datetime) -> bool:
        """Mark a job unindexed as of `at`, unless it is marked already (the reconciler checks
        it within the grace period of the older marker then), so the reconciler checks, once
        `reindex_grace_sec` has passed, that its due item is where it points: the claimer's
        note of a job whose advance it saw half done. False when the job is gone or marked.

        The write does not move the job's `version`, so the indexer leaves the marker to the
        reconciler (`takt.dispatch.indexer`)."""
        return self._set_unindexed(tenant_id, job_id, at_ms=to_ms(at), unless_marked=True)

    def _set_unindexed(self, tenant_id: str, job_id: str, at_ms: int, unless_marked: bool) -> bool:
        """Set the `unindexed` marker (its shard, and `at_ms`) on an existing job; False when the
        job is gone or, with `unless_marked`, already marked."""
        shard = zlib.crc32(f"{tenant_id}#{job_id}".encode()) % UNINDEXED_SHARDS
        condition = "attribute_exists(job_id)"
        if unless_marked:
            condition += " AND attribute_not_exists(unindexed)"
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression="SET unindexed = :s, unindexed_at = :at",
                ConditionExpression=condition,
                ExpressionAttributeValues={":s": {"S": str(shard)}, ":at": {"N": str(at_ms)}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def unindexed(self, shard: int, until_ms: int, limit: int = 500) -> list[Unindexed]:
        """The markers of one shard of the `unindexed` index set at or before `until_ms`, oldest
        first (an index read: eventually consistent, so each is a candidate to re-read)."""
        resp = self._db.query(
            TableName=self._table,
            IndexName=UNINDEXED_INDEX,
            KeyConditionExpression="unindexed = :s AND unindexed_at <= :u",
            ExpressionAttributeValues={":s": {"S": str(shard)}, ":u": {"N": str(until_ms)}},
            Limit=limit,
        )
        return [
            Unindexed(i["tenant_id"]["S"], i["job_id"]["S"], int(i["unindexed_at"]["N"]))
            for i in resp.get("Items", [])
        ]

    def delete(self, tenant_id: str, job_id: str) -> None:
        try:
            self._db.delete_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                ConditionExpression="attribute_exists(job_id)",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                raise NotFoundError(job_id) from exc
            raise

    def advance(
        self,
        job: JobRecord,
        fired: datetime,
        next_run: datetime | None,
        *,
        active_execution: str | None = None,
        region_epoch: int | None = None,
    ) -> Advance:
        """Move a job from the occurrence it just fired to the next one.

        Conditional on the job still being the one the claim read: pointing at `fired`, active,
        and at the same `version`. Without the version, an edit that lands between the claim's
        read and this write and leaves `next_run_time` where it was (a new schedule whose first
        occurrence is the same instant) would be overwritten by the old schedule's next
        occurrence, and every occurrence of the new one in between lost (DESIGN invariant 8).
        When the condition fails the answer carries the job as it now is, for the claimer to
        decide with.

        With a `region_epoch` (a multi-region deployment) the advance also sets it, conditional
        on the job never having been advanced at a later epoch: a region that lost the lease
        cannot move a job the new holder has moved, once that write has replicated to it.
        """
        names = {"#n": "next_run_time", "#s": "status", "#v": "version"}
        values: dict[str, Any] = {
            ":fired": {"S": format_time(fired)},
            ":active": {"S": JobStatus.ACTIVE.value},
            ":version": {"N": str(job.version)},
        }
        if next_run is None:
            update = "REMOVE #n SET #s = :done"
            values[":done"] = {"S": JobStatus.COMPLETED.value}
        else:
            update = "SET #n = :next"
            values[":next"] = {"S": format_time(next_run)}
        if active_execution:
            update += ", active_execution = :ax"
            values[":ax"] = {"S": active_execution}
        condition = "#n = :fired AND #s = :active AND #v = :version"
        if region_epoch is not None:
            update += ", region_epoch = :re"
            condition += " AND (attribute_not_exists(region_epoch) OR region_epoch <= :re)"
            values[":re"] = {"N": str(region_epoch)}
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": job.tenant_id}, "job_id": {"S": job.job_id}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                current = condition_failure_item(exc)
                if not current:
                    return Advance(False)
                stored = current.get("region_epoch")
                epoch = None if stored is None else int(stored["N"])
                return Advance(False, job_record(current), epoch)
            raise
        return Advance(True)

    def record_outcome(
        self, tenant_id: str, job_id: str, execution_id: str, outcome: str, at: datetime
    ) -> OutcomeNote | None:
        """Note a finished execution on its job, for listings and notifications; only ever moves
        forward in time (None when a later execution was noted already, or the job is gone).

        The same write keeps the job's failure streak: a succeeded execution ends it and closes
        the job's open incidents (returned, for their resolved notices), a dead or failed one
        lengthens it (and the job as it now is returned, for its notification policy). Neither
        costs a second write; a cancelled execution touches neither.

        The same note again (this execution, outcome and time, already the job's) changes
        nothing and returns the note as it stands: the watchdog redoes what follows an end
        that it died in the middle of (`Lifecycle.follow_up`), and the streak must count that
        end once while its notification still gets its chance.
        """
        values: dict[str, Any] = {
            ":x": {"S": execution_id},
            ":o": {"S": outcome},
            ":at": {"S": format_time(at)},
        }
        update = "SET last_execution_id = :x, last_outcome = :o, last_run_at = :at"
        returns: Literal["NONE", "UPDATED_OLD", "ALL_NEW"] = "NONE"
        if outcome == "succeeded":
            update += " REMOVE failure_streak, " + ", ".join(INCIDENT_ATTRS.values())
            returns = "UPDATED_OLD"
        elif outcome in FAILED_OUTCOMES:
            update += " ADD failure_streak :one"
            values[":one"] = {"N": "1"}
            returns = "ALL_NEW"
        try:
            resp = self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression=update,
                ConditionExpression=(
                    "attribute_exists(job_id) AND "
                    "(attribute_not_exists(last_execution_id) OR last_execution_id < :x OR "
                    "(last_execution_id = :x AND NOT (last_outcome = :o AND last_run_at = :at)))"
                ),
                ExpressionAttributeValues=values,
                ReturnValues=returns,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return _noted_already(condition_failure_item(exc), values, outcome)
        return _outcome_note(dict(resp.get("Attributes", {})), outcome)

    def outcome_settled(self, tenant_id: str, job_id: str) -> bool:
        """Whether a succeeded execution would change nothing `record_outcome` keeps but the
        `last_*` pointers: no failure streak and no open incident, and the job's noted outcome a
        success, or nothing noted yet on a job that will not fire again (a one-off that fired:
        the API looks for its runs in its history, `takt.api.jobs.JobService.shown`); True when
        the job is gone. A consistent read, so that a success that reads this after its
        completion was written and a failure noted meanwhile see each other
        (`takt.executions.lifecycle.Lifecycle._note_outcome`)."""
        resp = self._db.get_item(
            TableName=self._table,
            Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
            ProjectionExpression="job_id, #s, last_outcome, failure_streak, "
            + ", ".join(INCIDENT_ATTRS.values()),
            ExpressionAttributeNames={"#s": "status"},
            ConsistentRead=True,
        )
        item = resp.get("Item")
        if item is None:
            return True
        if any(attr in item for attr in ("failure_streak", *INCIDENT_ATTRS.values())):
            return False
        return success_may_go_unnoted(
            item.get("last_outcome", {}).get("S"), item.get("status", {}).get("S")
        )

    def open_incident(self, tenant_id: str, job_id: str, kind: str, incident_id: str) -> bool:
        """Record an incident of `kind` on the job unless one is open: True for the one writer
        that opened it, whose notification it then is (once per incident, however many workers
        note failures at once)."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression="SET #i = :i",
                ConditionExpression="attribute_exists(job_id) AND attribute_not_exists(#i)",
                ExpressionAttributeNames={"#i": INCIDENT_ATTRS[kind]},
                ExpressionAttributeValues={":i": {"S": incident_id}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def drop_incident(self, tenant_id: str, job_id: str, kind: str, incident_id: str) -> None:
        """Forget an incident whose notification could not be sent, so the next failure opens
        (and notifies) it again; a newer incident of that kind is left alone."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression="REMOVE #i",
                ConditionExpression="#i = :i",
                ExpressionAttributeNames={"#i": INCIDENT_ATTRS[kind]},
                ExpressionAttributeValues={":i": {"S": incident_id}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def take_slot(
        self, tenant_id: str, job_id: str, execution_id: str, *, expected: str | None
    ) -> bool:
        """Give the job's overlap slot to `execution_id` if it is still held by `expected`."""
        condition = (
            "attribute_not_exists(active_execution)"
            if expected is None
            else "active_execution = :old"
        )
        values: dict[str, Any] = {":x": {"S": execution_id}}
        if expected is not None:
            values[":old"] = {"S": expected}
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression="SET active_execution = :x",
                ConditionExpression=f"attribute_exists(job_id) AND {condition}",
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def release_slot(self, tenant_id: str, job_id: str, execution_id: str) -> None:
        try:
            self._db.update_item(
                TableName=self._table,
                Key={"tenant_id": {"S": tenant_id}, "job_id": {"S": job_id}},
                UpdateExpression="REMOVE active_execution",
                ConditionExpression="active_execution = :x",
                ExpressionAttributeValues={":x": {"S": execution_id}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def outlines(self, tenant_id: str, *, limit: int) -> tuple[list[JobOutline], bool]:
        """The outlines of up to `limit` of a tenant's jobs, oldest first, and whether that was
        all of them. Only the outline's attributes are read, so a page holds thousands of jobs.
        """
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "tenant_id = :t",
            "ExpressionAttributeValues": {":t": {"S": tenant_id}},
            "ExpressionAttributeNames": {"#n": "name", "#s": "status"},
            "ProjectionExpression": (
                "job_id, #n, #s, last_outcome, last_run_at, last_execution_id"
            ),
        }
        outlines: list[JobOutline] = []
        while len(outlines) < limit:
            kwargs["Limit"] = limit - len(outlines)
            resp = self._db.query(**kwargs)
            for item in resp.get("Items", []):
                values = {k: v.get("S") for k, v in item.items()}
                outlines.append(
                    JobOutline(
                        job_id=values["job_id"] or "",
                        name=values.get("name"),
                        status=values.get("status") or JobStatus.ACTIVE.value,
                        last_outcome=values.get("last_outcome"),
                        last_run_at=values.get("last_run_at"),
                        last_execution_id=values.get("last_execution_id"),
                    )
                )
            if "LastEvaluatedKey" not in resp:
                return outlines, True
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
        return outlines, False

    def list(
        self,
        tenant_id: str,
        *,
        limit: int,
        cursor: str | None,
        status: str | None = None,
        name_prefix: str | None = None,
        on_unreadable: Unreadable | None = None,
    ) -> tuple[list[JobRecord], str | None]:
        """One page of a tenant's jobs, oldest first (job ids are time-ordered); a job that
        cannot be read goes to `on_unreadable` and is left out of the page."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "tenant_id = :t",
            "ExpressionAttributeValues": {":t": {"S": tenant_id}},
            "Limit": limit,
        }
        filters = []
        if status:
            filters.append("#s = :s")
            kwargs.setdefault("ExpressionAttributeNames", {})["#s"] = "status"
            kwargs["ExpressionAttributeValues"][":s"] = {"S": status}
        if name_prefix:
            filters.append("begins_with(#nm, :np)")
            kwargs.setdefault("ExpressionAttributeNames", {})["#nm"] = "name"
            kwargs["ExpressionAttributeValues"][":np"] = {"S": name_prefix}
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        start = checked_cursor(cursor, JOB_CURSOR)
        if start:
            kwargs["ExclusiveStartKey"] = {"tenant_id": {"S": tenant_id}, "job_id": {"S": start}}
        resp = self._db.query(**kwargs)
        jobs = readable(resp.get("Items", []), job_record, ("tenant_id", "job_id"), on_unreadable)
        last = resp.get("LastEvaluatedKey")
        return jobs, (last["job_id"]["S"] if last else None)


def _outcome_note(item: dict[str, Any], outcome: str) -> OutcomeNote | None:
    """What `record_outcome` returns from the job's item as its note left it (a success's
    attributes as they were before, for the incidents it closed)."""
    incidents = {
        kind: str(item[attr]["S"]) for kind, attr in INCIDENT_ATTRS.items() if attr in item
    }
    if outcome == "succeeded":
        return OutcomeNote(job=None, failure_streak=0, incidents=incidents)
    if outcome in FAILED_OUTCOMES:
        return OutcomeNote(
            job=job_record(item),
            failure_streak=int(item.get("failure_streak", {}).get("N", "1")),
            incidents=incidents,
        )
    return None


def _noted_already(
    item: dict[str, Any] | None, values: dict[str, Any], outcome: str
) -> OutcomeNote | None:
    """A refused note: the note as it stands when the job's item already holds this very one
    (a redo), else None (a later execution was noted, or the job is gone)."""
    noted = (("last_execution_id", ":x"), ("last_outcome", ":o"), ("last_run_at", ":at"))
    if item is None or any(item.get(attr) != values[key] for attr, key in noted):
        return None
    if outcome == "succeeded":
        # The success already closed what it found; its resolved notices were its first note's.
        return OutcomeNote(job=None, failure_streak=0, incidents={})
    return _outcome_note(item, outcome)
