"""`takt deploy check` against an account: DynamoDB's limits from moto, Lambda's account settings
(which moto does not serve) answered through a botocore hook on the real client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from infra.deploy_check import DictContext, check, check_regions, plan
from takt_cli.commands.main import main

CDK_JSON = Path(__file__).resolve().parents[2] / "cdk.json"


def _context(**overrides: Any) -> DictContext:
    context: dict[str, Any] = json.loads(CDK_JSON.read_text())["context"]
    return DictContext(context | overrides)


def _lambda_with_quota(quota: int) -> Any:
    """A Lambda client whose GetAccountSettings answers as an account with `quota` does."""
    client = boto3.client("lambda", region_name="us-east-1")
    body = json.dumps(
        {
            "AccountLimit": {
                "ConcurrentExecutions": quota,
                "UnreservedConcurrentExecutions": quota,
            },
            "AccountUsage": {"FunctionCount": 0},
        }
    ).encode()

    class _Raw:
        def stream(self, **_: Any) -> Any:
            yield body

    def answer(**_: Any) -> AWSResponse:
        return AWSResponse("https://lambda", 200, {}, _Raw())  # type: ignore[arg-type]

    client.meta.events.register(
        "before-send.lambda.GetAccountSettings",
        answer,  # type: ignore[arg-type]  # a before-send handler may return the response
    )
    return client


@pytest.fixture
def dynamodb(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb", region_name="us-east-1", endpoint_url=moto_endpoint)


def test_a_new_account_with_a_quota_of_10_is_told_the_deploy_fails(dynamodb: Any) -> None:
    findings = check(plan(_context(profile="small")), _lambda_with_quota(10), dynamodb)

    (fail,) = [f for f in findings if f.level == "fail"]
    assert "quota 10" in fail.message and "107" in fail.message


def test_the_shipped_context_on_a_default_account_fits(dynamodb: Any) -> None:
    findings = check(plan(_context()), _lambda_with_quota(1000), dynamodb)

    # moto answers DescribeLimits with a table quota of 10,000 write units/s, an older default
    # (the seed profile is sized with 90,333 for its top of the hour): both table checks
    # throttle, and the seed's warm throughput and Fargate vCPU are asked for; its provisioned
    # tables may be raised past the account's 20,000 units each way and the tables' 10,000.
    levels = ["ok", "ok", "throttle", "ok", "ok", "throttle", "ask", "ask", "throttle", "throttle"]
    assert [f.level for f in findings] == levels
    assert "64 shards" in findings[2].message
    assert "at most 12788 (default)" in findings[3].message
    assert "seed profile" in findings[4].message
    assert "to 90333" in findings[5].message
    assert "provisioned table's partitions" in findings[6].message
    assert "380000 write units" in findings[8].message and "executions" in findings[8].message
    assert "360000 read units" in findings[9].message and "jobs" in findings[9].message


def test_lanes_beyond_the_quota_would_throttle(dynamodb: Any) -> None:
    lanes = {
        lane: {"maxConcurrency": 400, "batchingWindowSec": 0} for lane in ("high", "default", "low")
    }
    # The worker function on every lane (the seed's default and low lanes run on Fargate).
    worker_function = _context(lanes=lanes, dueShards=8, fargateWorker="false")
    findings = check(plan(worker_function), _lambda_with_quota(1000), dynamodb)

    assert [f.level for f in findings][:4] == ["ok", "throttle", "ok", "ok"]


def test_a_lane_beyond_sqs_in_flight_limit_would_stall(dynamodb: Any) -> None:
    """A standard queue hands out at most 120,000 messages in flight: 1,000 Fargate tasks of 256
    slots on one lane, with 0.5 s calls, would hit it (each slot holds its message 0.6 s of
    every 1.1; a worker function's lane stays below: 1,000 x 100)."""
    fargate = _context(
        fargateWorker="true",
        fargateLanes="low",
        fargateMaxTasks=1000,
        fargateSlots=256,
        fargateJobSec=0.5,
    )

    findings = check(plan(fargate), _lambda_with_quota(5000), dynamodb)

    (in_flight,) = [f for f in findings if "in flight" in f.message]
    assert in_flight.level == "throttle"
    assert "(low 139637)" in in_flight.message


def test_a_fargate_slot_holds_its_message_only_until_the_lease(dynamodb: Any) -> None:
    """Issue 26: `takt worker` deletes a run's message once it holds the lease, or before the
    hold of a message claimed ahead, so with 10 s calls a slot holds one at most 0.6 s in 10.6
    (the admission's reads and the lease, 0.5 s, then the delete's wait for its batch, 0.1 s):
    the same 256,000 slots hold at most 14,491, not one each."""
    fargate = _context(
        fargateWorker="true",
        fargateLanes="low",
        fargateMaxTasks=1000,
        fargateSlots=256,
        fargateJobSec=10,
    )

    planned = plan(fargate)
    findings = check(planned, _lambda_with_quota(5000), dynamodb)

    (in_flight,) = [f for f in findings if "in flight" in f.message]
    assert (planned.lanes_in_flight["low"], in_flight.level) == (14491, "ok"), (
        "issue 26: a Fargate slot counts in flight only before its release, not for the call"
    )


def test_regions_are_checked_each_against_its_own_quotas(dynamodb: Any) -> None:
    """Lambda's and DynamoDB's quotas are per region: a deployment across regions needs them
    raised in every region, and the check names the region whose quota falls short."""
    wanted = plan(_context(regions="us-east-1,us-east-2", witnessRegion="us-west-2"))
    quotas = {"us-east-1": 1000, "us-east-2": 10}

    findings = check_regions(wanted, lambda region: (_lambda_with_quota(quotas[region]), dynamodb))

    failures = [finding.message for finding in findings if finding.level == "fail"]
    assert wanted.regions == ("us-east-1", "us-east-2")
    assert {finding.message.split(":")[0] for finding in findings} == set(quotas), (
        "every finding names its region"
    )
    assert len(failures) == 1, failures
    assert failures[0].startswith("us-east-2: Lambda concurrency quota 10"), (
        "deploy-check-per-region: the region whose quota falls short is named"
    )


def test_the_command_refuses_a_bad_context_value_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["deploy", "check", "--cdk-json", str(CDK_JSON), "-c", "profile=tiny"])

    err = capsys.readouterr().err
    assert status != 0
    assert "'profile'" in err
    assert len(err.strip().splitlines()) == 1


def test_without_credentials_the_command_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """botocore refuses to sign before any request leaves: nothing reaches AWS or moto."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)

    def loads_the_cdk_app(context: object) -> None:
        raise AssertionError("the CDK app was loaded (jsii starts Node) before credentials")

    # Said before the CDK app loads: it took 21 s to say this when it came after.
    monkeypatch.setattr("infra.deploy_check.plan", loads_the_cdk_app)

    status = main(["deploy", "check", "--cdk-json", str(CDK_JSON)])

    err = capsys.readouterr().err
    assert status != 0
    assert "no AWS credentials found" in err
    assert len(err.strip().splitlines()) == 1


def test_the_tenx_profile_names_every_quota_it_is_sized_with(dynamodb: Any) -> None:
    """Rule: `takt deploy check -c profile=tenx` names each quota the profile needs beyond
    AWS's defaults, against the account's where it can be read and as `ask` where not."""
    findings = check(plan(_context(profile="tenx")), _lambda_with_quota(1000), dynamodb)
    by_level = {
        level: [f.message for f in findings if f.level == level] for level in ("throttle", "ask")
    }

    table = [m for m in by_level["throttle"] if "table-level write throughput quota" in m]
    assert table and "903333" in table[0], "the executions table's write quota must be named"
    warm = [m for m in by_level["ask"] if "warm throughput" in m]
    assert warm and "WriteUnitsPerSecond=903333" in warm[0], "the warm throughput must be named"
    fargate = [m for m in by_level["ask"] if "Fargate On-Demand vCPU" in m]
    assert fargate and "3529" in fargate[0] and "Tasks per service" in fargate[0], (
        "the Fargate fleet's vCPU and tasks per service must be named"
    )
    assert any("in flight" in m and "default" in m for m in by_level["throttle"]), (
        "SQS's in-flight limit on the Fargate lane must be named"
    )


def test_the_seed_profile_asks_for_its_top_of_the_hours_warm_table_and_fargate_vcpu(
    dynamodb: Any,
) -> None:
    """Rule: `takt deploy check` names every quota the profile needs beyond AWS's defaults; the
    seed carries its top of the hour on a warm executions table and the Fargate worker."""
    findings = check(plan(_context()), _lambda_with_quota(1000), dynamodb)

    asks = [f.message for f in findings if f.level == "ask"]
    assert len(asks) == 2, "the seed's warm throughput and Fargate vCPU must be asked for"
    assert "WriteUnitsPerSecond=90333" in asks[0]
    assert "at least 353" in asks[1]


def test_provisioned_tables_are_checked_against_dynamodbs_capacity_quotas(dynamodb: Any) -> None:
    """Rule: with `tableBilling=provisioned`, what is deployed must fit the account's provisioned
    capacity (`fail`), and what auto scaling may reach is named against the account's and each
    table's quota (`throttle`)."""
    capacity = json.dumps({"executions": {"write": [25000, 40000]}})
    deployed = check(
        plan(_context(tableBilling="provisioned", tableCapacity=capacity)),
        _lambda_with_quota(1000),
        dynamodb,
    )
    scaled = check(plan(_context(tableBilling="provisioned")), _lambda_with_quota(1000), dynamodb)

    (fail,) = [f.message for f in deployed if f.level == "fail"]
    assert "minimum write capacity" in fail, "a deployed minimum over the account's must fail"
    throttles = [f.message for f in scaled if "auto scaling may ask" in f.message]
    assert throttles and "executions" in throttles[0], (
        "tables whose auto scaling may pass the per-table quota must be named"
    )
    assert not [
        f
        for f in check(plan(_context(tableBilling="onDemand")), _lambda_with_quota(1000), dynamodb)
        if "provisioned" in f.message or "auto scaling" in f.message
    ], "on-demand tables have no provisioned capacity to check"
