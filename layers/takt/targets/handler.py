"""Registered-handler targets: parse the payload into the handler's model and call it.

The outcome rules (which errors are permanent, which are retried) are the SDK's contract and are
documented in `takt.handlers`.
"""

from __future__ import annotations

import time

from pydantic import ValidationError

from takt.handlers import Context, PermanentError, Registry
from takt.models.calls import CallContext, TargetResult

MAX_ERROR_CHARS = 500


class HandlerTarget:
    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    def serves(self, name: str) -> bool:
        return self._registry.get(name) is not None

    def call(self, name: str, ctx: CallContext) -> TargetResult:
        entry = self._registry.get(name)
        if entry is None:
            return TargetResult("unserved", error=f"no handler {name!r} in this worker")
        started = time.monotonic()
        try:
            args = entry.model.model_validate({} if ctx.payload is None else ctx.payload)
        except ValidationError as exc:
            fields = ", ".join(
                ".".join(str(p) for p in e["loc"]) or "payload" for e in exc.errors()
            )
            return TargetResult(
                "retryable",
                error=_clip(f"payload does not fit {entry.model.__name__}: {fields}"),
                duration_ms=_elapsed(started),
            )
        context = Context(
            job_id=ctx.job_id,
            execution_id=ctx.execution_id,
            attempt=ctx.attempt,
            scheduled_time=ctx.scheduled_time,
            stop=ctx.stop,
            deadline=ctx.deadline,
        )
        try:
            entry.func(args, context)
        except PermanentError as exc:
            return TargetResult(
                "permanent",
                error=_clip(str(exc) or "PermanentError"),
                duration_ms=_elapsed(started),
            )
        except Exception as exc:  # noqa: BLE001 - any other error of user code is a retryable outcome
            return TargetResult(
                "retryable",
                error=_clip(f"{type(exc).__name__}: {exc}"),
                duration_ms=_elapsed(started),
            )
        return TargetResult("success", duration_ms=_elapsed(started))


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
