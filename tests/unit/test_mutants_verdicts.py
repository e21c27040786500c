"""`make mutants` counts a mutation as caught only when a test judged it: the first failure must be
an assertion. A mutation whose program raises on its own (moto's `ValidationException` for an
expression value left unused, a `NameError`, a fixture that cannot be set up) is refused, since
any test that happens to run it would "catch" it, whatever rule it defends (issue 28)."""

from __future__ import annotations

import pytest

from tests.mutants.__main__ import judged, table
from tests.mutants.mutations import MUTATIONS

MUTATION = MUTATIONS[0]
TEST = "tests/integration/test_store_jobs.py::test_advance_keeps_an_edited_job_where_it_was"


def _output(summary: str) -> str:
    """What pytest prints around its short summary line of the first failure."""
    return f"F\n=== short test summary info ===\n{summary}\n1 failed in 3.1s\n"


@pytest.mark.parametrize(
    "message",
    [
        "AssertionError: an edit since the read keeps the job where it was",
        "assert ['stale completion accepted (worker-b)'] == []",
        "Failed: DID NOT RAISE <class 'takt.store.errors.ConflictError'>",
    ],
)
def test_an_assertion_failure_catches_the_mutation_and_its_line_is_kept(message: str) -> None:
    verdict = judged(MUTATION, _output(f"FAILED {TEST} - {message}"), 2.0)

    assert (verdict.caught_by, verdict.failure, verdict.refused) == (TEST, message, False), (
        "an assertion's failure is a catch, with the line it printed"
    )


@pytest.mark.parametrize(
    "summary",
    [
        f"FAILED {TEST} - botocore.exceptions.ClientError: An error occurred "
        "(ValidationException) when calling the UpdateItem operation: Value provided in "
        "ExpressionAttributeValues unused in expressions: keys: {:version}",
        f"FAILED {TEST} - NameError: name 'leased_at' is not defined",
        f"ERROR {TEST} - RuntimeError: the fixture could not start moto",
    ],
)
def test_a_mutation_whose_program_fails_on_its_own_is_refused_not_caught(summary: str) -> None:
    verdict = judged(MUTATION, _output(summary), 2.0)

    assert verdict.refused and verdict.survived, (
        "a mutation whose program fails on its own must be refused, not counted as caught"
    )
    assert "its program fails on its own" in verdict.problem
    assert TEST in verdict.problem


def test_a_log_line_before_the_summary_is_not_taken_for_the_failure() -> None:
    logged = "ERROR    takt:runner.py:496 heartbeat failed\n" + _output(
        f"FAILED {TEST} - AssertionError: the local lease counts from before its write was sent"
    )

    verdict = judged(MUTATION, logged, 2.0)

    assert (verdict.caught_by, verdict.refused) == (TEST, False), (
        "only pytest's short summary names the failure, not a captured log line"
    )


def test_a_refused_mutation_reads_refused_in_the_table() -> None:
    refused = judged(MUTATION, _output(f"FAILED {TEST} - KeyError: 'version'"), 2.0)

    row = table([refused]).splitlines()[-1]

    assert "**REFUSED**" in row and "KeyError" in row, "the table names a refusal and its cause"
