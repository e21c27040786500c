"""`takt runs get` draws a run's DAG as a tree: each task once, under its deepest upstream."""

from __future__ import annotations

from typing import Any

from takt_cli.commands.runs import render_tree


def task(task_id: str, state: str, depth: int, *depends_on: str, **extra: Any) -> dict[str, Any]:
    executions = extra.pop("executions", [])
    return {
        "id": task_id,
        "state": state,
        "depth": depth,
        "depends_on": list(depends_on),
        "generation": extra.pop("generation", 0),
        "executions": executions,
    }


def execution(attempt: int, started: str, finished: str | None) -> dict[str, Any]:
    return {"attempt": attempt, "started_at": started, "finished_at": finished}


RUN = {
    "id": "job_x.20261130T120000000Z",
    "state": "failed",
    "generation": 1,
    "tasks_total": 5,
    "counts": {"succeeded": 3, "failed": 1, "upstream_failed": 1},
    "error": "2 of 5 tasks did not succeed: c, e",
    "tasks": [
        task(
            "a",
            "succeeded",
            0,
            executions=[execution(1, "2026-11-30T12:00:00Z", "2026-11-30T12:00:01.500Z")],
        ),
        task(
            "b",
            "succeeded",
            1,
            "a",
            executions=[execution(2, "2026-11-30T12:00:02Z", "2026-11-30T12:01:32Z")],
        ),
        task(
            "c",
            "failed",
            1,
            "a",
            generation=1,
            executions=[execution(1, "2026-11-30T12:00:02Z", None)],
        ),
        task("d", "succeeded", 2, "c", "b"),
        task("e", "upstream_failed", 3, "d", "a"),
    ],
}


def test_the_tree_draws_each_task_once_under_its_deepest_upstream() -> None:
    assert render_tree(RUN).splitlines() == [
        "run job_x.20261130T120000000Z  failed  generation 1  5 tasks: "
        "1 failed, 3 succeeded, 1 upstream_failed",
        "error: 2 of 5 tasks did not succeed: c, e",
        "└── a  succeeded  attempt 1  1.5s",
        "    ├── b  succeeded  attempt 2  1m30s",
        "    │   └── d  succeeded  (after c)",
        "    │       └── e  upstream_failed  (after a)",
        "    └── c  failed  attempt 1  generation 1",
    ]
