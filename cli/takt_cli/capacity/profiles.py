"""The deployment profiles as the simulator reads them: the design and the account's quotas.

`takt_cli/profiles.json` holds each profile's whole CDK context (the CDK app synthesizes from the
same file, `infra.context.PROFILES`) and the account quotas the profile was sized with. Here a
profile, with `-c key=value` overrides as `cdk deploy` takes them, becomes the simulator's
`Design` and `Limits`, so `takt bench simulate --profile-name NAME` runs what that profile
deploys. The CLI ships without the CDK app, so the knobs are read here again rather than through
`infra.context`; tests/infra/test_infra_profiles.py checks that each profile's synthesized
template carries the values read here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from importlib.resources import files
from typing import Any

from takt_cli.capacity.model import CallProfile, Design, Limits

DEFAULT_PROFILE = "seed"
# The lane the seed's scenarios run in (a job's default).
SIMULATED_LANE = "default"
# A lane's batch when its context names none (SQS's one receive; infra.context's default).
DEFAULT_BATCH_SIZE = 10
# The claimer's memory when `functionMemoryMb` leaves it to the function's own sizing: one vCPU
# (infra/functions.py, CLAIMER).
CLAIMER_MEMORY_MB = 1769
# The worker function's own sizing (infra/functions.py, WORKER).
WORKER_MEMORY_MB = 1024
# `fargateEgress`: a public IPv4 address a task, or a NAT gateway (infra.context's two values).
PUBLIC_IP, NAT_GATEWAY = "publicIp", "natGateway"
# Fargate's CPU units and MiB per vCPU and GB.
CPU_UNITS_PER_VCPU = 1024
MIB_PER_GB = 1024


class ProfileError(ValueError):
    """An unknown profile, or an override it cannot take; the message names it."""


@dataclass(frozen=True)
class Quotas:
    """The account quotas a profile is sized with (`quotas` in profiles.json): AWS's defaults
    unless the profile needs more, in which case `takt deploy check` names each raise. (What a
    Fargate worker needs, vCPU and tasks, follows from its context: `fargateMaxTasks`.)"""

    lambda_concurrent_executions: int
    # DynamoDB's per-table throughput quota, which caps an on-demand table's writes too.
    table_max_write_units_per_sec: int
    # The executions table's write throughput ready before the first burst: an on-demand
    # table's warm throughput (4,000 for a new table), set with UpdateTable's WarmThroughput.
    table_warm_write_units_per_sec: int

    @classmethod
    def from_json(cls, given: Mapping[str, Any]) -> Quotas:
        return cls(
            lambda_concurrent_executions=int(given["lambdaConcurrentExecutions"]),
            table_max_write_units_per_sec=int(given["tableMaxWriteUnitsPerSec"]),
            table_warm_write_units_per_sec=int(given["tableWarmWriteUnitsPerSec"]),
        )

    def limits(self) -> Limits:
        """The simulator's limits in an account that grants these quotas."""
        return Limits(
            account_concurrency=self.lambda_concurrent_executions,
            table_max_write_units_per_sec=float(self.table_max_write_units_per_sec),
            new_table_write_units_per_sec=float(self.table_warm_write_units_per_sec),
        )


@dataclass(frozen=True)
class FargateFleet:
    """The Fargate worker's task bounds, when it serves the simulated lane."""

    min_tasks: int
    max_tasks: int
    scale_ahead_minutes: int


@dataclass(frozen=True)
class Profile:
    """A profile with its overrides applied: the context the CDK app would read."""

    name: str
    about: str
    quotas: Quotas
    context: Mapping[str, Any]
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def design(self) -> Design:
        """What the profile deploys, as the simulator's design (the default lane's workers;
        a Fargate fleet's size is the scenario's: `fargate`)."""
        lanes = _object(self.context, "lanes")
        lane = lanes.get(SIMULATED_LANE)
        if not isinstance(lane, dict) or "maxConcurrency" not in lane:
            raise ProfileError(f"-c lanes: must give the {SIMULATED_LANE!r} lane a maxConcurrency")
        memory = _object(self.context, "functionMemoryMb")
        return Design(
            due_shards=_int(self.context, "dueShards"),
            due_split_items=_int(self.context, "dueSplitItems"),
            due_split_max=_int(self.context, "dueSplitMax"),
            open_shards=_int(self.context, "openShards"),
            claim_parallelism=_int(self.context, "claimerThreads"),
            claimer_concurrency=_int(self.context, "claimerConcurrency"),
            lane_max_concurrency=int(lane["maxConcurrency"]),
            batch_size=int(lane.get("batchSize", DEFAULT_BATCH_SIZE)),
            # The worker runs as many of a batch's messages at once as the largest lane's batch
            # (infra/functions.py sets TAKT_WORKER_BATCH_CONCURRENCY so).
            batch_concurrency=max(
                int(tuning.get("batchSize", DEFAULT_BATCH_SIZE)) for tuning in lanes.values()
            ),
            claimer_memory_mb=int(memory.get("claimer", CLAIMER_MEMORY_MB)),
            worker_memory_mb=int(memory.get("worker", WORKER_MEMORY_MB)),
            # The Fargate worker's task, whether or not the profile turns it on (the report's
            # "on Fargate" runs use it).
            fargate_slots=_int(self.context, "fargateSlots"),
            fargate_vcpu=_int(self.context, "fargateCpu") / CPU_UNITS_PER_VCPU,
            fargate_memory_gb=_int(self.context, "fargateMemoryMiB") / MIB_PER_GB,
            fargate_nat_gateway=_egress(self.context) == NAT_GATEWAY,
        )

    def timed(self, calls: CallProfile) -> CallProfile:
        """`calls` with the lease the profile deploys: its `leaseSec` and `heartbeatSec` say
        which running calls renew their lease and how often, and with `watchdogIntervalSec`
        when the watchdog rechecks them, so the heartbeats and rechecks priced are the ones
        this profile's workers and watchdog make, not the runtime's defaults; its
        `recordAtLease`, who writes the execution (the claim or the lease); and its `dueCursor`,
        whether a claim passes the due items it fired with a cursor or deletes each."""
        return replace(
            calls,
            record_at_lease=_bool(self.context, "recordAtLease"),
            due_cursor=_bool(self.context, "dueCursor"),
            lease_sec=_float(self.context, "leaseSec"),
            heartbeat_sec=_float(self.context, "heartbeatSec"),
            watchdog_interval_sec=_float(self.context, "watchdogIntervalSec"),
        )

    def fargate(self) -> FargateFleet | None:
        """The Fargate worker's task bounds, if the profile turns it on for the simulated lane."""
        if not _bool(self.context, "fargateWorker"):
            return None
        if SIMULATED_LANE not in _list(self.context, "fargateLanes"):
            return None
        return FargateFleet(
            min_tasks=_int(self.context, "fargateMinTasks"),
            max_tasks=_int(self.context, "fargateMaxTasks"),
            scale_ahead_minutes=_int(self.context, "fargateScaleAheadMinutes"),
        )

    @property
    def table_billing(self) -> str:
        return str(self.context["tableBilling"])

    @property
    def table_target_utilization(self) -> int:
        """Target tracking's utilization, percent (`tableTargetUtilization`; the app's 70)."""
        return int(str(self.context.get("tableTargetUtilization", 70)))

    def describe(self) -> dict[str, Any]:
        """The profile as a report shows it: its name, what it is for, what was overridden."""
        return {
            "name": self.name,
            "about": self.about,
            "overrides": dict(self.overrides),
            "quotas": self.quotas.__dict__,
        }


def profiles_document() -> dict[str, Any]:
    """profiles.json, as shipped with the CLI."""
    document: dict[str, Any] = json.loads(
        files("takt_cli").joinpath("profiles.json").read_text(encoding="utf-8")
    )
    return document


def profile_names() -> tuple[str, ...]:
    return tuple(profiles_document())


def load_profile(name: str | None, overrides: Iterable[str] = ()) -> Profile:
    """The named profile (the default one when None) with `key=value` overrides, read as
    `cdk deploy -c` gives them; `-c profile=NAME` names the profile too."""
    given = dict(_override(item) for item in overrides)
    named = given.pop("profile", None)
    if named is not None and name is not None and str(named) != name:
        raise ProfileError(f"-c profile={named} and --profile-name {name} disagree")
    chosen = name or (str(named) if named is not None else DEFAULT_PROFILE)
    document = profiles_document()
    if chosen not in document:
        raise ProfileError(f"profile must be one of {tuple(document)}, not {chosen!r}")
    entry = document[chosen]
    context = dict(entry["context"])
    unknown = sorted(set(given) - set(context))
    if unknown:
        raise ProfileError(
            f"-c {unknown[0]}: not a knob of the profiles; they are " + ", ".join(sorted(context))
        )
    return Profile(
        name=chosen,
        about=str(entry["about"]),
        quotas=Quotas.from_json(entry["quotas"]),
        context=context | given,
        overrides=given,
    )


def _override(item: str) -> tuple[str, Any]:
    """`key=value`: the value as JSON where it reads as JSON (numbers, true, objects), else the
    string, as the CDK app accepts both."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ProfileError(f"-c takes KEY=VALUE, not {item!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def _int(context: Mapping[str, Any], key: str) -> int:
    try:
        return int(str(context[key]))
    except ValueError:
        raise ProfileError(f"-c {key}: must be an integer, not {context[key]!r}") from None


def _egress(context: Mapping[str, Any]) -> str:
    value = str(context["fargateEgress"])
    if value not in (PUBLIC_IP, NAT_GATEWAY):
        raise ProfileError(f"-c fargateEgress: must be {PUBLIC_IP} or {NAT_GATEWAY}, not {value!r}")
    return value


def _float(context: Mapping[str, Any], key: str) -> float:
    try:
        return float(str(context[key]))
    except ValueError:
        raise ProfileError(f"-c {key}: must be a number, not {context[key]!r}") from None


def _bool(context: Mapping[str, Any], key: str) -> bool:
    value = context[key]
    if isinstance(value, bool):
        return value
    if str(value).lower() in ("true", "false"):
        return str(value).lower() == "true"
    raise ProfileError(f"-c {key}: must be true or false, not {value!r}")


def _object(context: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = context[key]
    if not isinstance(value, dict):
        raise ProfileError(f"-c {key}: must be a JSON object, not {value!r}")
    return value


def _list(context: Mapping[str, Any], key: str) -> list[str]:
    value = context[key]
    items = value if isinstance(value, list) else str(value).split(",")
    return [str(item).strip() for item in items]
