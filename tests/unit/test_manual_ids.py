"""A manual run's id says so after its instant (issue 29, "Times": ids ended in `…000Zm`, the `m`
read as minutes), keeps its place in the job's history, and ids written the old way stay valid."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from takt.models.ids import execution_id, execution_key, split_execution_id
from takt.store.jobs import ATTENTION_CURSOR, EXECUTION_CURSOR

AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_a_manual_run_s_id_ends_its_instant_then_says_manual() -> None:
    assert execution_id("job_a", AT, manual=True) == "job_a.20261130T120000000Z-manual", (
        "a manual run's id reads as its instant, then `manual`"
    )


def test_a_manual_run_sorts_after_its_instant_s_scheduled_run_and_before_the_next() -> None:
    tokens = [
        split_execution_id(execution_id("job_a", at, manual=manual))[1]
        for at, manual in ((AT, False), (AT, True), (AT + timedelta(milliseconds=1), False))
    ]

    assert tokens == sorted(tokens), "a job's history stays in the order of its instants"


def test_cursors_and_keys_take_manual_ids_old_and_new() -> None:
    for suffix in ("m", "-manual"):
        token = f"20261130T120000000Z{suffix}"
        assert re.match(EXECUTION_CURSOR, token), f"a manual run's token is a cursor: {token}"
        assert re.match(ATTENTION_CURSOR, f"1764504000000#job_{'0' * 26}.{token}")
        assert execution_key(f"job_a.{token}~t~0") == (f"job_a.{token}", "exec#t#0")
