"""Routes an execution's stored `target` to the code that calls that kind of target."""

from __future__ import annotations

from takt.handlers import Registry
from takt.models.calls import CallContext, TargetResult
from takt.models.targets import (
    ContainerSpec,
    HandlerSpec,
    HttpSpec,
    LambdaSpec,
    StateMachineSpec,
    parse_target,
)
from takt.targets.container import ContainerTarget
from takt.targets.handler import HandlerTarget
from takt.targets.http import HttpTarget
from takt.targets.invoke import AwsInvokeTarget
from takt.targets.publish import QueueTopicTarget


class TargetRouter:
    """Every target kind a worker can call. Without a registry no handler is served here: their
    executions wait for a worker that serves them."""

    def __init__(
        self,
        http: HttpTarget,
        publisher: QueueTopicTarget,
        handlers: Registry | None = None,
        invoker: AwsInvokeTarget | None = None,
        containers: ContainerTarget | None = None,
    ) -> None:
        self._http = http
        self._publisher = publisher
        self._invoker = invoker
        self._containers = containers
        self._handlers = HandlerTarget(handlers or Registry())

    def serves(self, handler: str) -> bool:
        return self._handlers.serves(handler)

    def call(self, target: str, ctx: CallContext) -> TargetResult:
        try:
            spec = parse_target(target)
        except ValueError as exc:
            return TargetResult("permanent", error=f"unsupported target: {exc}")
        if isinstance(spec, HttpSpec):
            return self._http.call(spec, ctx)
        if isinstance(spec, HandlerSpec):
            return self._handlers.call(spec.name, ctx)
        if isinstance(spec, LambdaSpec | StateMachineSpec):
            if self._invoker is None:
                return TargetResult(
                    "permanent", error="this worker calls no Lambda or Step Functions"
                )
            return self._invoker.call(spec, ctx)
        if isinstance(spec, ContainerSpec):
            if self._containers is None:
                return TargetResult(
                    "permanent",
                    error="this deployment runs no containers (its context sets no "
                    "containerCluster)",
                )
            return self._containers.call(spec, ctx)
        return self._publisher.call(spec, ctx)
