"""Table output: a header row of upper-case column names, aligned columns, '-' for empty cells."""

from __future__ import annotations

import pytest

from takt_cli.commands.context import CliContext, render_table


def test_table_starts_with_upper_case_headers() -> None:
    text = render_table([{"id": "job_1", "status": "active"}], ["id", "status"])

    assert text.splitlines()[0].split() == ["ID", "STATUS"]


def test_table_has_one_line_per_row_after_the_header() -> None:
    rows = [{"id": f"job_{i}"} for i in range(3)]

    lines = render_table(rows, ["id"]).splitlines()

    assert lines[1:] == ["job_0", "job_1", "job_2"]


def test_table_columns_are_aligned_to_the_widest_cell() -> None:
    rows = [{"id": "job_1", "name": "a"}, {"id": "job_longer_id", "name": "b"}]

    lines = render_table(rows, ["id", "name"]).splitlines()

    assert {line.rindex(value) for line, value in zip(lines, ["NAME", "a", "b"], strict=True)} == {
        len("job_longer_id") + 2
    }


def test_empty_and_missing_cells_print_as_dash() -> None:
    text = render_table([{"id": "job_1", "name": None, "error": ""}], ["id", "name", "error", "x"])

    assert text.splitlines()[1].split() == ["job_1", "-", "-", "-"]


def test_table_without_rows_is_just_the_header() -> None:
    assert render_table([], ["id", "state"]) == "ID  STATE"


def test_a_command_with_nothing_to_list_prints_its_header(
    capsys: pytest.CaptureFixture[str],
) -> None:
    CliContext(endpoint="http://127.0.0.1:1", output="table").emit(
        {"items": []}, [], ["id", "state"]
    )

    assert capsys.readouterr().out == "ID  STATE\n"


def test_a_cell_prints_bidi_and_control_characters_escaped() -> None:
    table = render_table(
        [{"name": "invoice\u202egnp.exe", "note": "two\nlines\x1b[2J"}], ["name", "note"]
    )

    assert "\u202e" not in table and "\x1b" not in table and len(table.splitlines()) == 2, (
        f"a table prints bidi and control characters escaped, one row a line: {table!r}"
    )
    assert "invoice\\u202egnp.exe" in table and "two\\x0alines\\x1b[2J" in table
