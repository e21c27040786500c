"""`takt top`: throughput, lag and queue depth, refreshed in the terminal.

It reads `GET /v1/stats`, the numbers the console's overview shows: the deployment's metrics of
the last hour (CloudWatch's, or `takt local`'s in memory), its lanes, and the caller's jobs.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click

from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext, render_table

BLOCKS = " ▁▂▃▄▅▆▇█"
"""A sparkline's levels; a space is zero, or a minute with no value."""


@click.command()
@click.option(
    "--interval",
    type=click.FloatRange(min=0.5),
    default=2.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option("--once", is_flag=True, help="Print once and exit.")
@click.pass_obj
def top(ctx: CliContext, interval: float, once: bool) -> None:
    """Live throughput, lag and queue depth (Ctrl-C to quit).

    With -o json, one JSON document per refresh, one per line.
    """
    try:
        while True:
            stats, _ = call(ctx, "GET", "/v1/stats")
            if ctx.output == "json":
                click.echo(json.dumps(stats, separators=(",", ":")))
            else:
                if not once:
                    click.clear()
                click.echo(render(stats, ctx.endpoint))
            if once:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        return


def window_label(stats: dict[str, Any]) -> str:
    """What the hour's counts cover: the last hour, or the time since the metrics began when
    that is later (a restarted `takt local` knows nothing of the minutes before it)."""
    since = stats.get("metrics_since")
    if since is None or since <= stats["minutes"][0]["minute"]:
        return "in the last hour"
    return f"since {since[11:16]} UTC (metrics began then)"


def render(stats: dict[str, Any], endpoint: str) -> str:
    """The screen for one stats document.

    Each count says what it counts: runs are executions that ended (succeeded, failed or
    dead: one per execution), and the breakdown adds up to them; retries are failed attempts,
    one per attempt, on a line of their own; attention is a state of the tenant's kept history,
    not a count of the hour.
    """
    minutes = stats["minutes"]
    runs = [m["succeeded"] + m["failed"] + m["dead"] for m in minutes]
    # The minute in progress is partial, so the breakdown is the last full minute's.
    full = -2 if len(minutes) > 1 else -1
    done = minutes[full]
    lags = [m["lag_p99_ms"] for m in minutes]
    lagged = next((m for m in reversed(minutes) if m["lag_p99_ms"] is not None), None)
    jobs, totals = stats["jobs"], stats["totals"]
    hour = window_label(stats)
    lines = [
        click.style(f"takt top  {endpoint}  {stats['generated_at']}", bold=True),
        "",
        f"jobs       {jobs['active']} active, {jobs['paused']} paused, "
        f"{jobs['completed']} completed" + ("" if jobs["complete"] else " (first jobs only)"),
        f"runs       executions ended: {runs[-1]} this minute, {runs[full]} last minute "
        f"({done['succeeded']} succeeded, {done['failed']} failed, {done['dead']} dead), "
        f"{sum(runs)} {hour}",
        f"           {sparkline(runs)}",
        f"retries    attempts retried: {done['retried']} last minute, "
        f"{sum(m['retried'] for m in minutes)} {hour}",
        "lag p99    "
        + (
            f"{_ms(lagged['lag_p99_ms'])} (p50 {_ms(lagged['lag_p50_ms'])}, "
            f"max {_ms(lagged['lag_max_ms'])})"
            if lagged
            else "no runs this hour"
        ),
        f"           {sparkline(lags)}",
        f"watchdog   {totals['lease_expired']} leases expired, {totals['pending_resent']} resent, "
        f"{totals['stale_reports_fenced']} stale reports fenced {hour}",
        f"attention  {stats['dead_executions']} dead, {stats['failed_executions']} failed "
        "executions now (this tenant, all kept history)",
        "",
        render_table(stats["lanes"], ["lane", "waiting", "in_flight", "delayed", "dead_letter"]),
    ]
    if stats["failing_jobs"]:
        lines += [
            "",
            render_table(stats["failing_jobs"], ["id", "name", "last_outcome", "last_run_at"]),
        ]
    return "\n".join(lines)


def sparkline(values: list[float | None]) -> str:
    """One character per value, scaled to the largest; None and zero are blank."""
    top = max((v for v in values if v), default=0)
    if not top:
        return " " * len(values)
    steps = len(BLOCKS) - 1
    return "".join(BLOCKS[0] if not v else BLOCKS[max(1, round(v / top * steps))] for v in values)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.1f} s"
