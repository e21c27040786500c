"""Deployment knobs are read from context, as cdk.json or `-c` give them, and checked early."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App

from infra.app import unconfigured_region_note
from infra.context import (
    PROFILES,
    ContextError,
    DeployConfig,
    FargateWorkerConfig,
    JwtAuth,
    LaneTuning,
    RuntimeTuning,
    settings_env_var,
)
from takt.config import LANES, MAX_WORKER_SLOTS, Settings

DEPLOY_DOC = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text()


def _config(context: dict[str, Any], **overrides: Any) -> DeployConfig:
    return DeployConfig.from_context(App(context=context | overrides).node)


def test_shipped_context_selects_iam_and_tunes_every_lane(
    cdk_json_context: dict[str, Any],
) -> None:
    config = _config(cdk_json_context)

    assert config.jwt is None
    assert set(config.lanes) == set(LANES)
    assert config.lanes["high"] == LaneTuning(max_concurrency=50, batching_window_sec=0)
    # The default lane serves the seed's steady 1,400 executions/s (docs/CAPACITY.md).
    assert config.lanes["default"].max_concurrency == 333


def test_shipped_context_tunes_the_runtime_for_the_cloud(
    cdk_json_context: dict[str, Any],
) -> None:
    config = _config(cdk_json_context)

    # From the capacity simulator's steady 1,400/s and top-of-the-hour runs (docs/CAPACITY.md).
    assert config.tuning == RuntimeTuning(
        due_shards=64,
        due_split_items=2000,
        due_split_max=16,
        open_shards=64,
        claimer_threads=32,
        history_retention_days=7,
        # A lease of 60 s renewed every 15 s: the seed's 10 s calls end before their first
        # heartbeat (docs/CAPACITY.md, "The lease of the seed's 10 s calls").
        lease_sec=60,
        heartbeat_sec=15,
        watchdog_interval_sec=10,
        # The execution written by its lease, not its claim (docs/CAPACITY.md, "The record
        # written at the lease").
        record_at_lease=True,
        # A claim passes the due items it fired with its partition's cursor (takt.store.due).
        due_cursor=True,
    )
    assert config.tuning.environment()["TAKT_RECORD_AT_LEASE"] == "True"
    assert config.tuning.environment()["TAKT_DUE_CURSOR"] == "True"
    assert config.schedule_lag_alarm_ms == 5000
    assert config.signing_secret_name is None
    # The top of the hour's calls run on the Fargate worker, as many tasks as the scale-ahead
    # step sets for its busiest minute (docs/CAPACITY.md, "Profiles as shipped").
    assert config.fargate is not None
    assert (config.fargate.lanes, config.fargate.max_tasks) == (("default", "low"), 706)
    assert config.fargate.egress == "publicIp", (
        "no NAT gateway by default: each task reaches its targets through its own public IPv4"
    )
    assert config.claimer_concurrency == 384


def test_tuning_reaches_settings_under_the_names_it_reads(
    cdk_json_context: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tuning = _config(cdk_json_context).tuning
    for name, value in tuning.environment().items():
        monkeypatch.setenv(name, value)

    settings = Settings()

    for field in fields(tuning):
        assert getattr(settings, field.name) == getattr(tuning, field.name), field.name


def test_a_variable_settings_does_not_read_is_refused() -> None:
    assert settings_env_var("due_shards") == "TAKT_DUE_SHARDS"
    with pytest.raises(ValueError, match="no field"):
        settings_env_var("due_shard_count")


def test_command_line_strings_are_accepted(cdk_json_context: dict[str, Any]) -> None:
    config = _config(
        cdk_json_context,
        auth="jwt",
        jwtIssuer="https://issuer.example/",
        jwtAudience="takt, admin",
        apiRateLimit="25",
        lanes=json.dumps(cdk_json_context["lanes"]),
        dueShards="32",
        historyRetentionDays="30",
        fargateWorker="true",
        fargateLanes="low",
        fargateMinTasks="0",
        fargateMaxTasks="4",
    )

    assert config.jwt == JwtAuth(issuer="https://issuer.example/", audience=("takt", "admin"))
    assert config.api_rate_limit == 25
    assert config.tuning.due_shards == 32
    assert config.tuning.history_retention_days == 30
    assert config.fargate == FargateWorkerConfig(
        cpu=512,
        memory_mib=1024,
        min_tasks=0,
        max_tasks=4,
        lanes=("low",),
        vpc_id=None,
        slots=320,
        scale_ahead_minutes=5,
        job_sec=10.0,
    )


def test_fargate_knobs_are_checked_only_when_the_worker_is_on(
    cdk_json_context: dict[str, Any],
) -> None:
    config = _config(cdk_json_context, fargateWorker="false", fargateCpu=300)

    assert config.fargate is None


@pytest.mark.parametrize(
    ("overrides", "knob"),
    [
        ({"auth": "basic"}, "auth"),
        ({"auth": "jwt"}, "jwtIssuer"),
        ({"auth": "jwt", "jwtIssuer": "https://issuer.example/"}, "jwtAudience"),
        ({"apiBurstLimit": "many"}, "apiBurstLimit"),
        ({"logLevel": "CHATTY"}, "logLevel"),
        ({"lanes": {"high": {"maxConcurrency": 2, "batchingWindowSec": 0}}}, "lanes"),
        (
            {"lanes": {lane: {"maxConcurrency": 1, "batchingWindowSec": 0} for lane in LANES}},
            "maxConcurrency",
        ),
        (
            {"lanes": {lane: {"maxConcurrency": 5, "batchingWindowSec": 30} for lane in LANES}},
            "batchingWindowSec",
        ),
        ({"dueShards": 0}, "dueShards"),
        ({"dueShards": 129}, "dueShards"),
        ({"dueSplitItems": 0}, "dueSplitItems"),
        ({"dueSplitMax": 0}, "dueSplitMax"),
        ({"dueSplitMax": 65}, "dueSplitMax"),
        ({"openShards": 257}, "openShards"),
        ({"claimerThreads": 0}, "claimerThreads"),
        ({"claimerThreads": 65}, "claimerThreads"),
        ({"historyRetentionDays": "0.5"}, "historyRetentionDays"),
        ({"leaseSec": 5}, "leaseSec"),
        ({"heartbeatSec": 16}, "heartbeatSec"),
        ({"recordAtLease": "sometimes"}, "recordAtLease"),
        ({"dueCursor": "sometimes"}, "dueCursor"),
        # DESIGN: a heartbeat at most every quarter of the lease; a third is refused.
        ({"leaseSec": 45, "heartbeatSec": 15}, "heartbeatSec"),
        ({"watchdogIntervalSec": 5}, "watchdogIntervalSec"),
        ({"watchdogIntervalSec": 61}, "watchdogIntervalSec"),
        ({"scheduleLagAlarmMs": 500}, "scheduleLagAlarmMs"),
        ({"signingSecretName": "arn:aws:secretsmanager:us-east-1:1:secret:x"}, "signingSecretName"),
        ({"fargateWorker": "yes"}, "fargateWorker"),
        ({"fargateWorker": True, "fargateCpu": 300}, "fargateCpu"),
        ({"fargateWorker": True, "fargateMemoryMiB": 512}, "fargateMemoryMiB"),
        ({"fargateWorker": True, "fargateMinTasks": 5, "fargateMaxTasks": 4}, "fargateMaxTasks"),
        ({"fargateWorker": True, "fargateLanes": "urgent"}, "fargateLanes"),
        ({"fargateWorker": True, "fargateLanes": "low,low"}, "fargateLanes"),
        ({"fargateWorker": True, "fargateVpcId": "my-vpc"}, "fargateVpcId"),
        ({"fargateWorker": True, "fargateSlots": MAX_WORKER_SLOTS + 1}, "fargateSlots"),
        ({"fargateWorker": True, "fargateScaleAheadMinutes": 16}, "fargateScaleAheadMinutes"),
        ({"fargateWorker": True, "fargateJobSec": 0}, "fargateJobSec"),
        ({"fargateWorker": True, "fargateEgress": "public"}, "fargateEgress"),
        ({"fargateWorker": True, "fargateMaxTasks": 16_380}, "fargateMaxTasks"),
    ],
)
def test_bad_knob_fails_with_its_name(
    cdk_json_context: dict[str, Any], overrides: dict[str, Any], knob: str
) -> None:
    with pytest.raises(ContextError, match=knob):
        _config(cdk_json_context, **overrides)


def test_a_given_vpc_takes_more_tasks_than_the_apps_own_subnets_hold(
    cdk_json_context: dict[str, Any],
) -> None:
    """The app's own VPC holds at most 16,379 tasks a subnet (/18); a given VPC's subnets are
    the user's to size."""
    config = _config(
        cdk_json_context,
        fargateWorker=True,
        fargateMaxTasks=16_380,
        fargateVpcId="vpc-0123456789abcdef0",
    )

    assert config.fargate is not None
    assert config.fargate.max_tasks == 16_380


def test_missing_knob_fails_with_its_name(
    cdk_json_context: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A knob neither the profile nor cdk.json nor `-c` sets stops the synth by its name."""
    seed = {key: value for key, value in PROFILES["seed"].items() if key != "logLevel"}
    monkeypatch.setitem(PROFILES, "seed", seed)
    context = {key: value for key, value in cdk_json_context.items() if key != "logLevel"}

    with pytest.raises(ContextError, match="logLevel"):
        _config(context)


def test_a_synth_with_no_region_configured_says_where_cdk_out_is_bound() -> None:
    """The CDK CLI binds the templates to us-east-1 when nothing names a region; a later
    `cdk deploy --app cdk.out` then deploys there, whatever region its credentials name."""
    note = unconfigured_region_note("us-east-1", None)

    assert note is not None
    assert "cdk.out is bound to us-east-1" in note
    assert "AWS_REGION" in note


def test_a_synth_in_a_configured_region_says_nothing() -> None:
    assert unconfigured_region_note("eu-west-1", "eu-west-1") is None


def test_a_synth_across_regions_says_nothing_of_the_clis_region() -> None:
    """Every stack is bound to a region `regions` names: the CLI's fallback binds none."""
    assert unconfigured_region_note("us-east-1", None, "us-east-1,us-east-2") is None, (
        "regions-bind-every-stack: no note about the CLI's region"
    )


@pytest.mark.parametrize("profile", ["seed", "small"])
def test_the_deploy_doc_states_each_profiles_recovery_bound_from_its_lease(
    cdk_json_context: dict[str, Any], profile: str
) -> None:
    """Rule (DESIGN, worker failure): a dead worker's execution runs again within lease + clock
    margin + watchdog interval; docs/DEPLOY.md states that bound with the profile's numbers."""
    tuning = _config(cdk_json_context, profile=profile).tuning
    margin = Settings().clock_margin_sec
    bound = tuning.lease_sec + margin + tuning.watchdog_interval_sec
    stated = f"{tuning.lease_sec:g} + {margin:g} + {tuning.watchdog_interval_sec:g} = {bound:g} s"

    assert stated in DEPLOY_DOC, f"docs/DEPLOY.md must state the {profile} profile's {stated}"
