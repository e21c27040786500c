"""The handler SDK: registering handlers, and how a handler's answer becomes an outcome."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from takt.handlers import Context, HandlerRegistrationError, PermanentError, Registry
from takt.models.calls import CallContext, StopSignal
from takt.targets.handler import HandlerTarget

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


class Report(BaseModel):
    report: str
    copies: int = 1


class Defaults(BaseModel):
    verbose: bool = False


def _call(payload: object, stop: StopSignal | None = None) -> CallContext:
    return CallContext(
        job_id="job_x",
        execution_id="job_x.20260302T120000000Z",
        attempt=2,
        scheduled_time=NOON,
        payload=payload,
        timeout_sec=30.0,
        deadline=time.monotonic() + 30,
        stop=stop or StopSignal(),
    )


def test_the_decorator_registers_the_function_with_its_first_parameter_as_model() -> None:
    registry = Registry()

    @registry.handler("send_report")
    def send_report(args: Report, ctx: Context) -> None:
        return None

    entry = registry.get("send_report")
    assert entry is not None
    assert (entry.model, entry.func) == (Report, send_report)
    assert registry.names() == ["send_report"]


def test_a_handler_without_a_model_annotation_is_refused() -> None:
    registry = Registry()

    def untyped(args, ctx):  # type: ignore[no-untyped-def]
        return None

    with pytest.raises(HandlerRegistrationError, match="pydantic model"):
        registry.register("untyped", untyped)


def test_a_handler_with_the_wrong_parameters_is_refused() -> None:
    registry = Registry()

    def one(args: Report) -> None:
        return None

    with pytest.raises(HandlerRegistrationError, match="must take"):
        registry.register("one", one)  # type: ignore[arg-type]


def test_a_name_taken_by_another_function_is_refused_but_the_same_one_may_register_again() -> None:
    registry = Registry()

    def first(args: Report, ctx: Context) -> None:
        return None

    def second(args: Report, ctx: Context) -> None:
        return None

    registry.register("report", first)
    registry.register("report", first)
    with pytest.raises(HandlerRegistrationError, match="already registered"):
        registry.register("report", second)


@pytest.mark.parametrize("name", ["", "9lives", "has space", "a/b"])
def test_a_name_that_no_target_can_spell_is_refused(name: str) -> None:
    def fn(args: Report, ctx: Context) -> None:
        return None

    with pytest.raises(HandlerRegistrationError, match="bad handler name"):
        Registry().register(name, fn)


def _target(func: object, model: type[BaseModel] = Report) -> HandlerTarget:
    registry = Registry()
    registry.register("h", func)  # type: ignore[arg-type]
    return HandlerTarget(registry)


def test_the_handler_gets_its_parsed_arguments_and_the_execution_it_runs_for() -> None:
    seen: list[tuple[Report, str, int, datetime]] = []

    def run(args: Report, ctx: Context) -> None:
        seen.append((args, ctx.execution_id, ctx.attempt, ctx.scheduled_time))

    result = _target(run).call("h", _call({"report": "daily", "copies": 2}))

    assert result.outcome == "success"
    assert seen == [(Report(report="daily", copies=2), "job_x.20260302T120000000Z", 2, NOON)]


def test_a_permanent_error_fails_without_retry() -> None:
    def run(args: Report, ctx: Context) -> None:
        raise PermanentError("no such report")

    result = _target(run).call("h", _call({"report": "x"}))

    assert (result.outcome, result.error) == ("permanent", "no such report")


def test_any_other_exception_is_retryable_and_named() -> None:
    def run(args: Report, ctx: Context) -> None:
        raise ConnectionError("mail server down")

    result = _target(run).call("h", _call({"report": "x"}))

    assert (result.outcome, result.error) == ("retryable", "ConnectionError: mail server down")


def test_a_payload_that_does_not_fit_the_model_is_retryable_and_names_the_field() -> None:
    calls: list[Report] = []

    def run(args: Report, ctx: Context) -> None:
        calls.append(args)

    result = _target(run).call("h", _call({"copies": "many"}))

    assert result.outcome == "retryable"
    assert result.error == "payload does not fit Report: report, copies"
    assert calls == []


def test_no_payload_parses_as_an_empty_object() -> None:
    seen: list[Defaults] = []

    def run(args: Defaults, ctx: Context) -> None:
        seen.append(args)

    registry = Registry()
    registry.register("d", run)

    assert HandlerTarget(registry).call("d", _call(None)).outcome == "success"
    assert seen == [Defaults()]


def test_a_handler_this_worker_does_not_have_is_unserved() -> None:
    result = HandlerTarget(Registry()).call("elsewhere", _call({}))

    assert result.outcome == "unserved"


def test_a_very_long_error_is_clipped() -> None:
    def run(args: Report, ctx: Context) -> None:
        raise RuntimeError("x" * 5000)

    error = _target(run).call("h", _call({"report": "x"})).error

    assert error is not None and len(error) == 500 and error.endswith("…")


def test_the_context_reports_a_stop_and_its_reason_and_wakes_a_waiting_handler() -> None:
    stop = StopSignal()
    ctx = Context("job_x", "e", 1, NOON, stop, deadline=time.monotonic() + 60)
    woke: list[bool] = []
    waiter = threading.Thread(target=lambda: woke.append(ctx.wait(30)))
    waiter.start()

    stop.set("cancelled")
    stop.set("timeout")  # the first reason stays
    waiter.join(timeout=5)

    assert woke == [True]
    assert (ctx.should_stop, ctx.cancelled, ctx.stop_reason) == (True, True, "cancelled")


def test_the_context_counts_down_to_its_deadline() -> None:
    ctx = Context("job_x", "e", 1, NOON, StopSignal(), deadline=time.monotonic() + 60)
    unbounded = Context("job_x", "e", 1, NOON, StopSignal())

    remaining = ctx.remaining_sec
    assert remaining is not None and 59 < remaining <= 60
    assert unbounded.remaining_sec is None
    assert not ctx.should_stop
    assert ctx.wait(0) is False
