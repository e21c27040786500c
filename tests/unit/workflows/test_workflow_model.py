"""The checks that make a task list a workflow, and the graph helpers the engine uses."""

from __future__ import annotations

import pytest

from takt.models.ids import execution_key, task_execution_id
from takt.models.records import TaskSpec
from takt.workflows.model import (
    MAX_TASKS,
    WorkflowError,
    depths,
    downstream_of,
    find_cycle,
    topological_order,
    validate_tasks,
)


def t(task_id: str, *depends_on: str) -> TaskSpec:
    return TaskSpec(id=task_id, target="handler:x", depends_on=list(depends_on))


DIAMOND = [t("a"), t("b", "a"), t("c", "a"), t("d", "b", "c")]


def test_a_diamond_is_valid_and_ordered_upstream_first() -> None:
    validate_tasks(DIAMOND)
    order = topological_order(DIAMOND)
    assert order[0] == "a"
    assert order[-1] == "d"
    assert depths(DIAMOND) == {"a": 0, "b": 1, "c": 1, "d": 2}
    assert downstream_of(DIAMOND) == {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": []}


@pytest.mark.parametrize(
    ("tasks", "field", "words"),
    [
        ([], "tasks", "at least one task"),
        ([t("a"), t("a")], "tasks[1].id", "duplicate task id 'a'"),
        ([t("a", "nope")], "tasks[0].depends_on", "unknown task 'nope'"),
        ([t("a", "a")], "tasks[0].depends_on", "depends on itself"),
        ([t("a"), t("b", "a", "a")], "tasks[1].depends_on", "lists 'a' twice"),
        (
            [t("x"), t("a", "c"), t("b", "a"), t("c", "b")],
            "tasks[1].depends_on",
            "a -> b -> c -> a",
        ),
    ],
    ids=["empty", "duplicate", "unknown", "self", "twice", "cycle"],
)
def test_a_bad_task_list_names_the_task_at_fault(
    tasks: list[TaskSpec], field: str, words: str
) -> None:
    with pytest.raises(WorkflowError) as caught:
        validate_tasks(tasks)
    assert caught.value.field == field
    assert words in str(caught.value)


def test_more_than_the_maximum_number_of_tasks_is_refused() -> None:
    validate_tasks([t(f"t{i}") for i in range(MAX_TASKS)])
    with pytest.raises(WorkflowError, match=f"the limit is {MAX_TASKS}"):
        validate_tasks([t(f"t{i}") for i in range(MAX_TASKS + 1)])


def test_fan_in_and_fan_out_of_1000_are_valid() -> None:
    leaves = [f"l{i}" for i in range(1000)]
    validate_tasks([t("root"), *(t(leaf, "root") for leaf in leaves)])
    validate_tasks([*(t(leaf) for leaf in leaves), t("sink", *leaves)])


def test_a_long_chain_needs_no_recursion() -> None:
    chain = [t("s0")] + [t(f"s{i}", f"s{i - 1}") for i in range(1, MAX_TASKS)]
    validate_tasks(chain)
    assert depths(chain)[f"s{MAX_TASKS - 1}"] == MAX_TASKS - 1


def test_a_cycle_is_found_beside_valid_tasks() -> None:
    assert find_cycle(DIAMOND) == []
    cycle = find_cycle([t("a"), t("b", "a", "c"), t("c", "b")])
    assert sorted(cycle) == ["b", "c"]


def test_a_task_execution_lives_in_its_runs_partition() -> None:
    run_id = "job_abc.20261130T120000000Z"
    exec_id = task_execution_id(run_id, "load-2", 3)
    assert exec_id == "job_abc.20261130T120000000Z~load-2~3"
    assert execution_key(exec_id) == (run_id, "exec#load-2#3")
    assert execution_key(run_id) == ("job_abc", "20261130T120000000Z")
    assert execution_key("job_abc.20261130T120000000Zm~a~0") == (
        "job_abc.20261130T120000000Zm",
        "exec#a#0",
    )


@pytest.mark.parametrize(
    "bad", ["job_abc.20261130T120000000Z~a", "job_abc.20261130T120000000Z~a~x"]
)
def test_a_malformed_task_execution_id_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="not an execution id"):
        execution_key(bad)
