"""A workflow's tasks as the API takes them, and the checks that make a set of tasks a DAG.

The checks run before anything is stored (DESIGN invariant 7) and name the task at fault as a
field path (`tasks[3].depends_on`), which the API turns into its problem+json `errors[].field`.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from pydantic import field_validator

from takt.models.records import TaskSpec, tasks_blob
from takt.models.target_forms import TargetField, check_target, target_text

MAX_TASKS = 2000
"""The most tasks one workflow may have: room for a fan-out or fan-in of 1,000 and more."""

MAX_STORED_BYTES = 300 * 1024
"""The compressed task list is stored in the job item, under DynamoDB's 400 KB item limit."""


class TaskIn(TaskSpec):
    """A task in a create or update body: its target in any form a job's target takes."""

    target: TargetField

    @field_validator("target", mode="before")
    @classmethod
    def _target_object(cls, value: Any) -> Any:
        return target_text(value)

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        return check_target(value)


class WorkflowError(ValueError):
    """A task list that is not a valid workflow; `field` names the task and its field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def validate_tasks(tasks: list[TaskSpec]) -> None:
    """Raise WorkflowError unless `tasks` is a non-empty DAG of at most MAX_TASKS tasks."""
    if not tasks:
        raise WorkflowError("tasks", "a workflow needs at least one task")
    if len(tasks) > MAX_TASKS:
        raise WorkflowError("tasks", f"{len(tasks)} tasks; the limit is {MAX_TASKS}")
    position: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.id in position:
            raise WorkflowError(
                f"tasks[{i}].id", f"duplicate task id {task.id!r} (also tasks[{position[task.id]}])"
            )
        position[task.id] = i
    for i, task in enumerate(tasks):
        seen: set[str] = set()
        for dep in task.depends_on:
            if dep not in position:
                raise WorkflowError(
                    f"tasks[{i}].depends_on", f"task {task.id!r} depends on unknown task {dep!r}"
                )
            if dep == task.id:
                raise WorkflowError(f"tasks[{i}].depends_on", f"task {task.id!r} depends on itself")
            if dep in seen:
                raise WorkflowError(
                    f"tasks[{i}].depends_on", f"task {task.id!r} lists {dep!r} twice"
                )
            seen.add(dep)
    cycle = find_cycle(tasks)
    if cycle:
        # Named from the cycle's first task in definition order, which is the one blamed.
        start = min(range(len(cycle)), key=lambda i: position[cycle[i]])
        cycle = cycle[start:] + cycle[:start]
        first = position[cycle[0]]
        raise WorkflowError(
            f"tasks[{first}].depends_on", "dependency cycle: " + " -> ".join([*cycle, cycle[0]])
        )
    blob = tasks_blob(tasks) or b""
    if len(blob) > MAX_STORED_BYTES:
        raise WorkflowError(
            "tasks", f"the tasks take {len(blob)} bytes compressed; the limit is {MAX_STORED_BYTES}"
        )


def topological_order(tasks: list[TaskSpec]) -> list[str]:
    """Task ids, every task after its upstreams (Kahn); tasks on a cycle are left out."""
    indegree = {t.id: len(t.depends_on) for t in tasks}
    downstream = downstream_of(tasks)
    ready = deque(t.id for t in tasks if not t.depends_on)
    order: list[str] = []
    while ready:
        task_id = ready.popleft()
        order.append(task_id)
        for child in downstream[task_id]:
            indegree[child] -= 1
            if indegree[child] == 0:
                ready.append(child)
    return order


def find_cycle(tasks: list[TaskSpec]) -> list[str]:
    """One dependency cycle as task ids in order, or [] when there is none."""
    ordered = set(topological_order(tasks))
    if len(ordered) == len(tasks):
        return []
    upstream = {t.id: [d for d in t.depends_on if d not in ordered] for t in tasks}
    # Every task left over has a left-over upstream: walk upstream until a task repeats.
    start = next(t.id for t in tasks if t.id not in ordered)
    path: list[str] = []
    index: dict[str, int] = {}
    current = start
    while current not in index:
        index[current] = len(path)
        path.append(current)
        current = upstream[current][0]
    return list(reversed(path[index[current] :]))


def downstream_of(tasks: list[TaskSpec]) -> dict[str, list[str]]:
    """Task id -> the ids of the tasks that depend on it, in definition order."""
    downstream: dict[str, list[str]] = {t.id: [] for t in tasks}
    for task in tasks:
        for dep in task.depends_on:
            downstream[dep].append(task.id)
    return downstream


def depths(tasks: list[TaskSpec]) -> dict[str, int]:
    """Task id -> its depth: 0 for a root, else one more than its deepest upstream."""
    by_id = {t.id: t for t in tasks}
    depth: dict[str, int] = {}
    for task_id in topological_order(tasks):
        deps = by_id[task_id].depends_on
        depth[task_id] = 1 + max(depth[d] for d in deps) if deps else 0
    return depth
