"""Container targets on moto's ECS (server mode): RunTask on Fargate, DescribeTasks until the task
stopped, StopTask when the call is told to stop.

moto's tasks start RUNNING and step towards STOPPED on each DescribeTasks, their container's exit
code always 0; the other stopped states (another exit code, no exit code at all) are written into
DescribeTasks' parsed answer by a botocore `after-call` hook on the real client.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from takt.clock import ManualClock
from takt.models.calls import CallContext
from takt.models.records import ExecState
from takt.models.targets import ContainerSpec, parse_target
from takt.targets.container import ContainerTarget, Placement, run_token, task_family
from takt.targets.router import TargetRouter
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.env import ServicesFactory

SCHEDULED = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def _client(endpoint: str, service: str) -> Any:
    session: Any = boto3.session.Session(region_name="us-east-1")
    return session.client(service, endpoint_url=endpoint)


@pytest.fixture(scope="module")
def network(moto_endpoint: str) -> tuple[str, str]:
    """A subnet and a security group moto's EC2 knows, made once (moto's EC2 is slow to start)."""
    ec2 = _client(moto_endpoint, "ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    # moto names a task's network interface only in a VPC with DNS host names (as AWS's default).
    ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName=uuid.uuid4().hex, Description="t", VpcId=vpc)
    return subnet, group["GroupId"]


@pytest.fixture
def placement(moto_endpoint: str, network: tuple[str, str]) -> Placement:
    """A cluster and a log prefix of this test's own."""
    cluster = f"c-{uuid.uuid4().hex[:8]}"
    _client(moto_endpoint, "ecs").create_cluster(clusterName=cluster)
    return Placement(
        cluster=cluster,
        subnets=(network[0],),
        security_groups=(network[1],),
        execution_role_arn="arn:aws:iam::123456789012:role/takt-container-execution",
        task_role_arn=None,
        log_group="/takt/containers",
        log_prefix=f"p{uuid.uuid4().hex[:6]}",
        region="us-east-1",
        poll_sec=0.0,
    )


def _ctx(payload: Any = None) -> CallContext:
    return CallContext(
        job_id="job-1",
        execution_id=f"ex-{uuid.uuid4().hex[:8]}",
        attempt=1,
        scheduled_time=SCHEDULED,
        payload=payload,
        timeout_sec=60,
    )


def _ctx_of(execution_id: str) -> CallContext:
    return CallContext("job-1", execution_id, 1, SCHEDULED, None, 60)


def _hooked(endpoint: str, hook: Callable[..., None] | None = None) -> Any:
    ecs = _client(endpoint, "ecs")
    if hook is not None:
        ecs.meta.events.register("after-call.ecs.DescribeTasks", hook)
    return ecs


def _stopped_with(**container: Any) -> Callable[..., None]:
    """A hook that shows every described task STOPPED, its container as `container` says."""

    def hook(parsed: dict[str, Any], **_: Any) -> None:
        for task in parsed.get("tasks", []):
            task["lastStatus"] = "STOPPED"
            task["stoppedReason"] = "Essential container in task exited"
            for found in task["containers"]:
                found.pop("exitCode", None)
                found.update(container)

    return hook


SPEC = ContainerSpec(
    image="public.ecr.aws/docker/library/busybox:1.36",
    command=("sh", "-c", "echo hi"),
    environment=(("GREETING", "hello"),),
)


def test_container_exit_code_0_succeeds_on_fargate_with_its_log_stream_linked(
    moto_endpoint: str, placement: Placement
) -> None:
    ecs = _hooked(moto_endpoint)
    target = ContainerTarget(lambda: ecs, placement)
    ctx = _ctx({"n": 1})

    result = target.call(SPEC, ctx)

    assert result.outcome == "success", f"exit code 0 is success: {result}"
    tasks = ecs.list_tasks(cluster=placement.cluster)["taskArns"]
    task = ecs.describe_tasks(cluster=placement.cluster, tasks=tasks)["tasks"][0]
    assert task["launchType"] == "FARGATE", "container targets run on Fargate"
    env = {e["name"]: e["value"] for e in task["overrides"]["containerOverrides"][0]["environment"]}
    assert env["TAKT_EXECUTION_ID"] == ctx.execution_id, "the task is told its execution"
    assert env["TAKT_PAYLOAD"] == '{"n":1}', "the payload reaches the task as JSON"
    assert env["GREETING"] == "hello", "the job's environment reaches the task"
    task_id = tasks[0].rsplit("/", 1)[-1]
    assert result.logs is not None and result.logs.endswith(
        f"{placement.log_prefix}$252Ftask$252F{task_id}"
    ), f"the outcome links the task's awslogs stream: {result.logs}"


def test_container_run_task_names_the_attempts_idempotency_token(
    moto_endpoint: str, placement: Placement
) -> None:
    sent: list[dict[str, Any]] = []
    ecs = _client(moto_endpoint, "ecs")
    ecs.meta.events.register(
        "provide-client-params.ecs.RunTask", lambda params, **_: sent.append(dict(params))
    )
    ctx = _ctx()

    ContainerTarget(lambda: ecs, placement).call(SPEC, ctx)

    assert [p["clientToken"] for p in sent] == [run_token(ctx)], (
        "RunTask names the attempt's idempotency token, so a resent RunTask starts no second task"
    )
    assert run_token(ctx) == run_token(_ctx_of(ctx.execution_id)), "one token per attempt"
    assert len(run_token(ctx)) <= 64, "ECS takes tokens of at most 64 characters"


def test_container_task_definition_is_registered_once_per_image_and_size(
    moto_endpoint: str, placement: Placement
) -> None:
    ecs = _hooked(moto_endpoint)
    ContainerTarget(lambda: ecs, placement).call(SPEC, _ctx())
    ContainerTarget(lambda: ecs, placement).call(SPEC, _ctx())

    family = task_family(SPEC, placement)
    revisions = ecs.list_task_definitions(familyPrefix=family)["taskDefinitionArns"]
    assert len(revisions) == 1, f"a second worker reuses the family's definition: {revisions}"
    definition = ecs.describe_task_definition(taskDefinition=family)["taskDefinition"]
    log = definition["containerDefinitions"][0]["logConfiguration"]
    assert log["logDriver"] == "awslogs", "the container's output goes to CloudWatch Logs"
    assert (definition["cpu"], definition["memory"]) == ("256", "512"), "the task's size"


def test_container_nonzero_exit_code_fails_the_attempt_naming_the_code_and_reason(
    moto_endpoint: str, placement: Placement
) -> None:
    ecs = _hooked(moto_endpoint, _stopped_with(exitCode=3))

    result = ContainerTarget(lambda: ecs, placement).call(SPEC, _ctx())

    assert result.outcome == "retryable", f"a non-zero exit fails the attempt: {result}"
    assert result.error == "exit code 3: Essential container in task exited", result.error
    assert result.logs is not None, "a failed task's logs are linked too"


def test_container_that_never_ran_fails_permanently_with_ecs_reason(
    moto_endpoint: str, placement: Placement
) -> None:
    ecs = _hooked(moto_endpoint, _stopped_with(reason="CannotPullContainerError: not found"))

    result = ContainerTarget(lambda: ecs, placement).call(SPEC, _ctx())

    assert result.outcome == "permanent", f"a task that cannot start fails: {result}"
    assert result.error is not None and "CannotPullContainerError" in result.error, result.error


def test_container_failed_look_at_a_running_task_waits_on_rather_than_run_it_twice(
    moto_endpoint: str, placement: Placement
) -> None:
    looks: list[int] = []

    def throttled_once(**_: Any) -> None:
        looks.append(1)
        if len(looks) == 1:
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}},
                "DescribeTasks",
            )

    ecs = _hooked(moto_endpoint, throttled_once)

    result = ContainerTarget(lambda: ecs, placement).call(SPEC, _ctx())

    assert result.outcome == "success", f"a throttled look does not end the attempt: {result}"
    tasks = ecs.list_tasks(cluster=placement.cluster)["taskArns"]
    assert len(tasks) == 1 and len(looks) > 1, "one task, looked at again after the throttle"


def test_container_call_told_to_stop_stops_its_task(
    moto_endpoint: str, placement: Placement
) -> None:
    ctx = _ctx()

    def still_running(parsed: dict[str, Any], **_: Any) -> None:
        for task in parsed.get("tasks", []):
            if task["desiredStatus"] == "RUNNING":
                task["lastStatus"] = "RUNNING"
        ctx.stop.set("timeout")

    ecs = _hooked(moto_endpoint, still_running)

    result = ContainerTarget(lambda: ecs, placement).call(SPEC, ctx)

    tasks = ecs.list_tasks(cluster=placement.cluster, desiredStatus="STOPPED")["taskArns"]
    assert len(tasks) == 1, "a timed-out call stops its task (StopTask), nothing left running"
    assert result.outcome == "retryable" and result.error == "task stopped by takt (timeout)"


def test_container_target_without_a_cluster_fails_permanently_naming_the_setting() -> None:
    router = TargetRouter(http=Any, publisher=Any)  # type: ignore[arg-type]
    text = SPEC.text()
    assert parse_target(text) == SPEC, "the stored form reads back as the same container"

    result = router.call(text, _ctx())

    assert result.outcome == "permanent" and "containerCluster" in (result.error or ""), (
        f"a worker without a cluster says which setting turns containers on: {result}"
    )


def test_container_run_by_the_worker_records_its_log_stream_in_the_attempt(
    make_svc: ServicesFactory, clock: ManualClock, placement: Placement
) -> None:
    svc = make_svc(
        container_cluster=placement.cluster,
        container_subnets=placement.subnets,
        container_security_groups=placement.security_groups,
        container_execution_role_arn=placement.execution_role_arn,
        container_log_prefix=placement.log_prefix,
        container_poll_sec=0.0,
    )
    record, message = submit_to(svc, clock, SPEC.text(), {"n": 1})

    outcome = runner_for(svc).process(message)

    done = stored(svc, record)
    assert outcome.state == ExecState.SUCCEEDED.value, f"exit code 0 succeeds: {outcome}"
    logs = done.attempts[-1].logs
    assert logs is not None and logs.startswith(
        "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1#logsV2:"
    ), f"the execution's attempt links the task's CloudWatch log stream: {logs}"
