"""`takt runs ...`: a workflow's runs, one run as a tree of its tasks, re-running a failed run."""

from __future__ import annotations

from typing import Any

import click

from takt.models.ids import parse_time
from takt_cli.commands.client import call
from takt_cli.commands.context import CliContext
from takt_cli.commands.jobs import job_argument

COLUMNS = ["id", "state", "generation", "tasks_total", "started_at", "finished_at", "error"]


@click.group()
def runs() -> None:
    """Inspect and re-run workflow runs."""


@runs.command("list")
@job_argument
@click.option("--limit", default=50, show_default=True)
@click.option("--cursor")
@click.pass_obj
def list_(ctx: CliContext, job_id: str, limit: int, cursor: str | None) -> None:
    """A workflow's runs, newest first."""
    page, _ = call(ctx, "GET", f"/v1/jobs/{job_id}/runs", query={"limit": limit, "cursor": cursor})
    ctx.emit(page, page["items"], COLUMNS)
    if ctx.output == "table" and page.get("next_cursor"):
        click.echo(f"next page: --cursor {page['next_cursor']}", err=True)


@runs.command("get")
@click.argument("run_id")
@click.pass_obj
def get(ctx: CliContext, run_id: str) -> None:
    """One run as a tree: each task under its deepest upstream, with state, attempt, duration."""
    run, _ = call(ctx, "GET", f"/v1/runs/{run_id}")
    _emit_tree(ctx, run)


@runs.command("retry")
@click.argument("run_id")
@click.pass_obj
def retry(ctx: CliContext, run_id: str) -> None:
    """Re-run the failed, dead and not-run tasks of a failed run."""
    run, _ = call(ctx, "POST", f"/v1/runs/{run_id}/retry")
    _emit_tree(ctx, run)


def _emit_tree(ctx: CliContext, run: dict[str, Any]) -> None:
    if ctx.output == "json":
        ctx.emit(run)
    else:
        click.echo(render_tree(run))


def render_tree(run: dict[str, Any]) -> str:
    """The run as text: a header, then its tasks as a tree.

    A DAG is not a tree: each task is drawn once, under its deepest upstream (the one that
    decides when it can start, the last in `depends_on` among equals), and names its other
    upstreams after `after`.
    """
    tasks: list[dict[str, Any]] = run["tasks"]
    by_id = {t["id"]: t for t in tasks}
    children: dict[str | None, list[str]] = {}
    for task in tasks:
        children.setdefault(_parent(task, by_id), []).append(task["id"])
    counts = ", ".join(f"{n} {state}" for state, n in sorted(run["counts"].items()))
    lines = [
        f"run {run['id']}  {run['state']}  generation {run['generation']}  "
        f"{run['tasks_total']} tasks: {counts}"
    ]
    if run.get("error"):
        lines.append(f"error: {run['error']}")
    stack: list[tuple[str, str, bool]] = [
        (task_id, "", i == len(children.get(None, [])) - 1)
        for i, task_id in enumerate(children.get(None, []))
    ]
    stack.reverse()
    while stack:
        task_id, prefix, last = stack.pop()
        task = by_id[task_id]
        lines.append(f"{prefix}{'└── ' if last else '├── '}{_describe(task, by_id)}")
        below = children.get(task_id, [])
        inner = prefix + ("    " if last else "│   ")
        stack.extend(
            (child, inner, i == len(below) - 1) for i, child in reversed(list(enumerate(below)))
        )
    return "\n".join(lines)


def _parent(task: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str | None:
    upstream: list[str] = task["depends_on"]
    if not upstream:
        return None
    deepest = max(by_id[u]["depth"] for u in upstream)
    return [u for u in upstream if by_id[u]["depth"] == deepest][-1]


def _describe(task: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> str:
    parts = [task["id"], task["state"]]
    executions: list[dict[str, Any]] = task["executions"]
    if executions:
        current = executions[-1]
        parts.append(current.get("attempt_label") or f"attempt {current['attempt']}")
        duration = _duration(current.get("started_at"), current.get("finished_at"))
        if duration is not None:
            parts.append(duration)
    if task["generation"]:
        parts.append(f"generation {task['generation']}")
    others = [u for u in task["depends_on"] if u != _parent(task, by_id)]
    if others:
        parts.append(f"(after {', '.join(others)})")
    return "  ".join(parts)


def _duration(started: str | None, finished: str | None) -> str | None:
    if not started or not finished:
        return None
    seconds = (parse_time(finished) - parse_time(started)).total_seconds()
    return _format_seconds(seconds)


def _format_seconds(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"
