"""Registered handlers: Python functions a job can target as `handler:NAME` (the worker SDK).

A handler takes its arguments as a pydantic model, parsed from the job's payload, and a
`Context`::

    from pydantic import BaseModel
    from takt.handlers import Context, PermanentError, handler

    class Report(BaseModel):
        report: str

    @handler("send_report")
    def send_report(args: Report, ctx: Context) -> None:
        if args.report == "unknown":
            raise PermanentError("no such report")   # failed, no retry
        ...                                           # any other exception is retried

The same module runs in a worker Lambda (`TAKT_HANDLER_MODULES=my_handlers`) and in a long-running
`takt worker --module my_handlers` (Fargate, for jobs longer than Lambda's 15 minutes); both use
the same lease, heartbeat and completion code.

What the worker does with a handler's answer:

- it returns: the execution succeeded (the return value is not kept);
- it raises `PermanentError`: the execution failed, with no retry;
- it raises anything else: a retryable failure, retried with the job's backoff, then dead;
- the payload does not fit the model (a pydantic validation error): also retryable. The payload
  is a snapshot taken when the occurrence fired, and during a rolling deploy an older worker may
  meet a payload only a newer model accepts; the retry budget bounds the cost, and a dead
  execution can be re-run (`takt executions retry`) once the model or the job is fixed. A job's
  `payload: null` is parsed as `{}`, so a model whose fields all have defaults needs no payload.

A handler is a plain function that runs in a thread. The worker cannot kill it: when the execution
is cancelled, times out, loses its lease or its worker has to stop, `ctx.should_stop` becomes true
(`ctx.stop_reason` says why) and the worker stops waiting for the answer at once. A long handler
should check `ctx.should_stop` between steps, or sleep with `ctx.wait(seconds)`, and return.
"""

from __future__ import annotations

import importlib
import inspect
import threading
import time
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from takt.models.calls import StopReason, StopSignal
from takt.models.targets import HANDLER_NAME

M = TypeVar("M", bound=BaseModel)


class PermanentError(Exception):
    """Raised by a handler to fail its execution without a retry: retrying cannot help."""


class HandlerRegistrationError(ValueError):
    """A handler cannot be registered: a bad name, a name taken, or no pydantic model."""


@dataclass(frozen=True)
class Context:
    """What a running handler may know about its execution, and whether it should stop."""

    job_id: str
    execution_id: str
    attempt: int
    scheduled_time: datetime
    stop: StopSignal
    deadline: float | None = None

    @property
    def should_stop(self) -> bool:
        """True once the worker stopped waiting for this call: return as soon as you can."""
        return self.stop.is_set()

    @property
    def cancelled(self) -> bool:
        """True when someone cancelled the execution (a narrower `should_stop`)."""
        return self.stop.reason == "cancelled"

    @property
    def stop_reason(self) -> StopReason | None:
        """`cancelled`, `timeout`, `lease_lost` or `shutdown`; None while the call may go on."""
        return self.stop.reason

    @property
    def remaining_sec(self) -> float | None:
        """Seconds left before the execution's timeout (or its worker's stop), None if unbounded."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking early when told to stop; True if told to stop."""
        return self.stop.wait(seconds)


HandlerFunc = Callable[[M, Context], object]


@dataclass(frozen=True)
class Registered:
    name: str
    model: type[BaseModel]
    func: Callable[[Any, Context], object]


class Registry:
    """Handlers by name. Importing a handler module registers its handlers here."""

    def __init__(self) -> None:
        self._handlers: dict[str, Registered] = {}
        self._lock = threading.Lock()

    def handler(self, name: str) -> Callable[[HandlerFunc[M]], HandlerFunc[M]]:
        """Register the decorated function as `name`; its first parameter's type is the model."""

        def register(func: HandlerFunc[M]) -> HandlerFunc[M]:
            self.register(name, func)
            return func

        return register

    def register(self, name: str, func: Callable[[Any, Context], object]) -> None:
        if not HANDLER_NAME.match(name):
            raise HandlerRegistrationError(
                f"bad handler name {name!r}: a letter or _, then up to 127 letters, digits, _ . -"
            )
        model = _model_of(func)
        with self._lock:
            taken = self._handlers.get(name)
            if taken is not None and taken.func is not func:
                raise HandlerRegistrationError(f"handler {name!r} is already registered")
            self._handlers[name] = Registered(name, model, func)

    def get(self, name: str) -> Registered | None:
        return self._handlers.get(name)

    def names(self) -> list[str]:
        return sorted(self._handlers)


def _model_of(func: Callable[..., object]) -> type[BaseModel]:
    """The pydantic model a handler takes: the annotation of its first parameter."""
    params = list(inspect.signature(func).parameters)
    if len(params) != 2:
        raise HandlerRegistrationError(
            f"{func.__qualname__} must take (args: SomeModel, ctx: Context), not {params}"
        )
    hint = typing.get_type_hints(func).get(params[0])
    if not (isinstance(hint, type) and issubclass(hint, BaseModel)):
        raise HandlerRegistrationError(
            f"the first parameter of {func.__qualname__} must be annotated with a pydantic model"
        )
    return hint


registry = Registry()
"""The process-wide registry that `handler` registers into and workers run from."""

handler = registry.handler


def load_modules(modules: Iterable[str]) -> list[str]:
    """Import each handler module, which registers its handlers in `registry`; returns the
    names `registry` then holds.

    An import error propagates: a worker that cannot load its handlers must not start and take
    messages it would only have to send back.
    """
    for module in modules:
        importlib.import_module(module)
    return registry.names()
