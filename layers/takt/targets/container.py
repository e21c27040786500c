"""Container targets: run a job's container as one ECS task on Fargate and wait for its exit code.

**Task definitions.** RunTask's overrides can change a container's command, environment, CPU and
memory, but not its image, so a generic overrides-based definition cannot run a job's image:
each (image, cpu, memory) gets a task definition of its own. Its family is named from a digest of
everything it holds (`takt-<digest>`: the image, the size, the roles and the log settings), so
the first call in a worker looks the family up and registers it only when it is missing; an
equal family always holds an equal definition, and a worker's restart registers nothing new. The
command and the environment travel as overrides, with the execution's identity and payload as
`TAKT_*` variables (the payload as JSON in `TAKT_PAYLOAD`; RunTask takes 8 KiB of overrides).

**The run.** RunTask (launch type FARGATE, the deployment's subnets and security groups), then
DescribeTasks every `poll_sec` until the task is STOPPED. The worker's runner keeps the lease with
its heartbeats meanwhile (takt.worker.runner) and sets the call's stop signal on a cancel, a
timeout or a lost lease: the task is then stopped (StopTask), so nothing runs on that nobody
waits for. A task that stopped with exit code 0 succeeded; another exit code is a failed attempt
(retryable: the job's retries decide, as for a Lambda function's error) naming the code and ECS's
stop reason; a task that could not start (RunTask's failures, or stopped without an exit code:
an image that cannot be pulled, say) failed permanently with ECS's reason.

**Logs.** The awslogs driver writes the container's output to the deployment's log group, stream
`<prefix>/task/<task id>`; every outcome names that stream's CloudWatch console address in `logs`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from botocore.exceptions import BotoCoreError, ClientError

from takt.models.calls import CallContext, TargetResult
from takt.models.targets import ContainerSpec
from takt.targets.publish import aws_error_result

CONTAINER_NAME = "task"
# RunTask's limit on the overrides' size, in characters of their JSON.
MAX_OVERRIDES_CHARS = 8192
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Placement:
    """Where and as whom the deployment runs container targets (Settings' `container_*`)."""

    cluster: str
    subnets: tuple[str, ...]
    security_groups: tuple[str, ...]
    execution_role_arn: str | None
    task_role_arn: str | None
    log_group: str
    log_prefix: str
    region: str
    public_ip: bool = False
    poll_sec: float = 5.0


def task_family(spec: ContainerSpec, placement: Placement) -> str:
    """The task definition family of a container target: a digest of what the definition holds,
    so one family always names one definition."""
    held = [
        spec.image,
        spec.cpu,
        spec.memory,
        placement.execution_role_arn,
        placement.task_role_arn,
        placement.log_group,
        placement.log_prefix,
    ]
    digest = hashlib.sha256(json.dumps(held).encode()).hexdigest()[:32]
    return f"takt-{digest}"


def run_token(ctx: CallContext) -> str:
    """RunTask's idempotency token for one attempt: a RunTask sent again for the same attempt
    (botocore's own retry after a lost answer) names the same token, and ECS starts no second
    task for it."""
    digest = hashlib.sha256(f"{ctx.execution_id}/{ctx.attempt}".encode()).hexdigest()[:58]
    return f"takt-{digest}"


def logs_link(placement: Placement, task_arn: str) -> str:
    """The CloudWatch console address of a task's log stream (the console escapes a group and a
    stream twice, with `$` for `%`)."""

    def escaped(text: str) -> str:
        return quote(quote(text, safe=""), safe="").replace("%", "$")

    stream = f"{placement.log_prefix}/{CONTAINER_NAME}/{task_arn.rsplit('/', 1)[-1]}"
    return (
        f"https://{placement.region}.console.aws.amazon.com/cloudwatch/home?region="
        f"{placement.region}#logsV2:log-groups/log-group/{escaped(placement.log_group)}"
        f"/log-events/{escaped(stream)}"
    )


class ContainerTarget:
    """Runs container targets as ECS tasks; `ecs` makes the client on the first call."""

    def __init__(
        self,
        ecs: Callable[[], Any],
        placement: Placement,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ecs_factory = ecs
        self._ecs: Any = None
        self._placement = placement
        self._monotonic = monotonic
        self._definitions: dict[str, str] = {}
        self._lock = threading.Lock()

    def call(self, spec: ContainerSpec, ctx: CallContext) -> TargetResult:
        started = self._monotonic()
        overrides = _overrides(spec, ctx)
        if len(json.dumps(overrides, separators=(",", ":"))) > MAX_OVERRIDES_CHARS:
            return TargetResult(
                "permanent",
                error=f"the payload and environment exceed RunTask's {MAX_OVERRIDES_CHARS} "
                "characters of overrides: pass a smaller payload (or a reference to it)",
            )
        try:
            ecs = self._client()
            task_arn, failure = self._run(ecs, spec, overrides, run_token(ctx))
            if task_arn is None:
                return TargetResult("permanent", error=_clip(f"the task did not start: {failure}"))
            return self._wait(ecs, task_arn, ctx, started)
        except (ClientError, BotoCoreError) as exc:
            return aws_error_result(exc, started)

    def _client(self) -> Any:
        with self._lock:
            if self._ecs is None:
                self._ecs = self._ecs_factory()
            return self._ecs

    def _run(
        self, ecs: Any, spec: ContainerSpec, overrides: dict[str, Any], token: str
    ) -> tuple[str | None, str]:
        """Start the task: its ARN, or None and why ECS placed none."""
        network: dict[str, Any] = {
            "subnets": list(self._placement.subnets),
            "securityGroups": list(self._placement.security_groups),
            "assignPublicIp": "ENABLED" if self._placement.public_ip else "DISABLED",
        }
        answer = ecs.run_task(
            cluster=self._placement.cluster,
            taskDefinition=self._definition(ecs, spec),
            launchType="FARGATE",
            count=1,
            networkConfiguration={"awsvpcConfiguration": network},
            overrides=overrides,
            startedBy="takt",
            clientToken=token,
        )
        tasks = answer.get("tasks") or []
        if tasks:
            return str(tasks[0]["taskArn"]), ""
        failures = answer.get("failures") or [{}]
        first = failures[0]
        return None, f"{first.get('reason', 'no task placed')} {first.get('detail', '')}".strip()

    def _definition(self, ecs: Any, spec: ContainerSpec) -> str:
        """The task definition of `spec`'s family: looked up (or registered) once a worker."""
        family = task_family(spec, self._placement)
        with self._lock:
            known = self._definitions.get(family)
        if known is not None:
            return known
        try:
            found = ecs.describe_task_definition(taskDefinition=family)["taskDefinition"]
            arn = str(found["taskDefinitionArn"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in (
                "ClientException",
                "ResourceNotFoundException",
            ):
                raise
            arn = self._register(ecs, spec, family)
        with self._lock:
            self._definitions[family] = arn
        return arn

    def _register(self, ecs: Any, spec: ContainerSpec, family: str) -> str:
        container: dict[str, Any] = {
            "name": CONTAINER_NAME,
            "image": spec.image,
            "essential": True,
            # The whole task's memory, as the container's hard limit: it is the task's only one.
            "memory": spec.memory,
            "logConfiguration": {
                "logDriver": "awslogs",
                "options": {
                    "awslogs-group": self._placement.log_group,
                    "awslogs-region": self._placement.region,
                    "awslogs-stream-prefix": self._placement.log_prefix,
                },
            },
        }
        roles = {
            key: value
            for key, value in (
                ("executionRoleArn", self._placement.execution_role_arn),
                ("taskRoleArn", self._placement.task_role_arn),
            )
            if value is not None
        }
        answer = ecs.register_task_definition(
            family=family,
            requiresCompatibilities=["FARGATE"],
            networkMode="awsvpc",
            cpu=str(spec.cpu),
            memory=str(spec.memory),
            containerDefinitions=[container],
            **roles,
        )
        return str(answer["taskDefinition"]["taskDefinitionArn"])

    def _wait(self, ecs: Any, task_arn: str, ctx: CallContext, started: float) -> TargetResult:
        """Look at the task until it stopped; stop it when the call is asked to stop or its
        deadline passes."""
        logs = logs_link(self._placement, task_arn)
        while True:
            task = self._describe(ecs, task_arn)
            if task is not None and task.get("lastStatus") == "STOPPED":
                return _stopped(task, logs, self._elapsed(started))
            wait = self._placement.poll_sec
            if ctx.deadline is not None:
                wait = min(wait, max(0.0, ctx.deadline - self._monotonic()))
            if ctx.stop.wait(wait) or (
                ctx.deadline is not None and self._monotonic() >= ctx.deadline
            ):
                reason = ctx.stop.reason or "timeout"
                ecs.stop_task(
                    cluster=self._placement.cluster,
                    task=task_arn,
                    reason=f"takt: {reason}",
                )
                return TargetResult(
                    "retryable",
                    error=f"task stopped by takt ({reason})",
                    duration_ms=self._elapsed(started),
                    logs=logs,
                )

    def _describe(self, ecs: Any, task_arn: str) -> dict[str, Any] | None:
        """The task as ECS describes it, or None when the look failed (throttled, the network):
        the task runs on whatever the answer, so the wait goes on rather than end the attempt,
        whose retry would start a second task beside it."""
        try:
            answer = ecs.describe_tasks(cluster=self._placement.cluster, tasks=[task_arn])
        except (ClientError, BotoCoreError):
            return None
        tasks = answer.get("tasks") or []
        if not tasks:
            return {"lastStatus": "STOPPED", "stoppedReason": "ECS no longer knows the task"}
        task: dict[str, Any] = tasks[0]
        return task

    def _elapsed(self, started: float) -> int:
        return int((self._monotonic() - started) * 1000)


def _overrides(spec: ContainerSpec, ctx: CallContext) -> dict[str, Any]:
    """The container's command and environment for this attempt: the job's, and takt's own
    `TAKT_*` variables naming the execution and carrying its payload."""
    environment = dict(spec.environment)
    environment.update(
        {
            "TAKT_JOB_ID": ctx.job_id,
            "TAKT_EXECUTION_ID": ctx.execution_id,
            "TAKT_ATTEMPT": str(ctx.attempt),
            "TAKT_SCHEDULED_TIME": ctx.scheduled_time.isoformat(),
        }
    )
    if ctx.payload is not None:
        environment["TAKT_PAYLOAD"] = json.dumps(ctx.payload, separators=(",", ":"))
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "environment": [{"name": k, "value": v} for k, v in sorted(environment.items())],
    }
    if spec.command:
        container["command"] = list(spec.command)
    return {"containerOverrides": [container]}


def _stopped(task: dict[str, Any], logs: str, duration_ms: int) -> TargetResult:
    """The outcome of a stopped task: its container's exit code, or why it never ran."""
    containers = [c for c in task.get("containers") or [] if c.get("name") == CONTAINER_NAME]
    code = containers[0].get("exitCode") if containers else None
    reason = task.get("stoppedReason") or ""
    if code is None:
        detail = containers[0].get("reason", "") if containers else ""
        why = "; ".join(part for part in (reason, detail) if part) or "no exit code"
        return TargetResult(
            "permanent",
            error=_clip(f"the container did not run: {why}"),
            duration_ms=duration_ms,
            logs=logs,
        )
    if code == 0:
        return TargetResult("success", duration_ms=duration_ms, logs=logs)
    return TargetResult(
        "retryable",
        error=_clip(f"exit code {code}" + (f": {reason}" if reason else "")),
        duration_ms=duration_ms,
        logs=logs,
    )


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
