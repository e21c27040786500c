"""Example registered handlers: what a user's module for `takt worker --module` looks like.

Importing this module registers two handlers: `send_report`, a short one that shows the
permanent / retryable split, and `export_rows`, a long one that works in steps and stops between
them when its execution is cancelled, times out or its worker has to stop.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from takt.handlers import Context, PermanentError, handler

REPORTS = frozenset({"daily", "weekly"})


class Report(BaseModel):
    report: str
    recipients: list[str] = Field(default_factory=list)


class Export(BaseModel):
    rows: int = Field(ge=1, le=10_000_000)
    rows_per_step: int = Field(default=1000, ge=1)
    seconds_per_step: float = Field(default=0.1, ge=0)


@handler("send_report")
def send_report(args: Report, ctx: Context) -> None:
    """An unknown report can never succeed, so it fails for good instead of being retried."""
    if args.report not in REPORTS:
        raise PermanentError(f"no report named {args.report!r}")
    if not args.recipients:
        # Any other exception is retried with the job's backoff: recipients may be added.
        raise ValueError("no recipients yet")
    print(  # the example's visible effect; a real handler would send the report here
        f"{args.report} report to {', '.join(args.recipients)} "
        f"(execution {ctx.execution_id}, attempt {ctx.attempt})",
        flush=True,
    )


@handler("export_rows")
def export_rows(args: Export, ctx: Context) -> None:
    """A long job: one step at a time, and between steps, stop when told to."""
    done = 0
    while done < args.rows:
        if ctx.wait(args.seconds_per_step):
            print(f"export stopped at row {done}: {ctx.stop_reason}", flush=True)
            return
        done = min(args.rows, done + args.rows_per_step)
    print(f"exported {done} rows (execution {ctx.execution_id})", flush=True)
