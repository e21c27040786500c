"""`takt import` reads a hostile file within bounds (`takt_cli.migrate.reading`): a YAML alias
bomb, a file nested 100,000 deep, an oversized or non-UTF-8 file is refused in one line; a
schedule that cannot be mapped (a date past year 9999, an `Input` nested 10,000 deep) is refused
alone while the rest of the file goes on; and what is printed cannot drive the terminal. Dry runs
only: nothing here reaches an API."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from takt_cli.commands.main import main
from takt_cli.migrate.reading import MAX_SOURCE_BYTES

TARGET = "https://runner.example/run"
# Far below what expanding the bomb takes (hundreds of MB), far above what refusing it takes.
MAX_PEAK_BYTES = 20 * 1024 * 1024


def _bomb(levels: int, width: int) -> str:
    """A CronJob whose container args are `width ** levels` strings, written in a few hundred
    bytes of nested YAML aliases (a billion laughs)."""
    lines = ["apiVersion: batch/v1", "kind: CronJob", "metadata: {name: bomb}"]
    lines.append("x-l0: &l0 [" + ", ".join(["lol"] * width) + "]")
    for level in range(1, levels):
        lines.append(f"x-l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    lines += [
        "spec:",
        "  schedule: '* * * * *'",
        "  jobTemplate: {spec: {template: {spec: {containers: "
        f"[{{name: c, image: busybox, args: *l{levels - 1}}}]}}}}}}}}",
    ]
    return "\n".join(lines) + "\n"


def _import(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, data: bytes
) -> tuple[int, str, list[str]]:
    path = tmp_path / f"source.{kind}"
    path.write_bytes(data)
    args = ["-o", "json", "import", kind, str(path), "--dry-run"]
    code = main(args + (["--target", TARGET] if kind == "k8s" else []))
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def test_a_yaml_alias_bomb_is_refused_before_it_expands(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bomb = _bomb(levels=10, width=4)
    assert len(bomb) < 1000
    tracemalloc.start()
    try:
        code, _, err = _import(capsys, tmp_path, "k8s", bomb.encode())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert code == 1
    assert len(err) == 1 and "expands to more than" in err[0], (
        f"alias expansion is bounded on import: a {len(bomb)}-byte bomb is refused in one line, "
        f"not expanded: {err[:2]}"
    )
    assert peak < MAX_PEAK_BYTES, f"the import of a {len(bomb)}-byte file allocated {peak} bytes"


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("k8s", "[" * 100_000 + "]" * 100_000),
        ("k8s", "".join(f"{' ' * level}a:\n" for level in range(2000)) + " " * 2000 + "b: 1\n"),
        ("eventbridge", "[" * 100_000 + "]" * 100_000),
    ],
    ids=["yaml flow", "yaml block", "json"],
)
def test_a_file_nested_100000_deep_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, text: str
) -> None:
    code, _, err = _import(capsys, tmp_path, kind, text.encode())

    assert code == 1
    assert len(err) == 1 and err[0].startswith("takt: error: "), (
        f"nesting is bounded on import: a deep file is one line of error, no traceback: {err[:3]}"
    )


def test_an_oversized_or_non_utf8_file_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    big = json.dumps({"Schedules": [], "pad": "x" * MAX_SOURCE_BYTES}).encode()

    code, _, err = _import(capsys, tmp_path, "eventbridge", big)
    assert (code, len(err)) == (1, 1)
    assert f"over {MAX_SOURCE_BYTES} bytes" in err[0], f"an import's size is bounded: {err}"

    code, _, err = _import(capsys, tmp_path, "eventbridge", b'{"Schedules": ["\xff"]}')
    assert (code, len(err)) == (1, 1)
    assert "not UTF-8" in err[0], f"a file that is not UTF-8 is one line of error: {err}"


def test_a_schedule_that_cannot_be_mapped_is_refused_alone_and_the_file_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = {"Arn": "arn:aws:sqs:us-east-1:123456789012:jobs"}
    schedules = [
        {"Name": "year-10000", "ScheduleExpression": "cron(0 0 1 1 ? 9999)", "Target": target},
        {
            "Name": "deep-input",
            "ScheduleExpression": "rate(5 minutes)",
            "Target": {**target, "Input": "[" * 10_000 + "]" * 10_000},
        },
        {"Name": "fine", "ScheduleExpression": "rate(5 minutes)", "Target": target},
    ]

    code, out, err = _import(
        capsys, tmp_path, "eventbridge", json.dumps({"Schedules": schedules}).encode()
    )

    assert code == 1, err  # a dry run exits as the import would: 1 when it refused an item
    assert [body["name"] for body in json.loads(out)] == ["fine"], (
        "a schedule that cannot be mapped is refused alone: the rest of the file goes on"
    )
    assert err[-1] == "takt: error: 2 of 3 refused"
    assert [line.split(": ")[2] for line in err[:-1]] == [
        "default/year-10000",
        "default/deep-input",
    ]
    assert "nested more than" in err[1]


def test_a_refusal_prints_bidi_and_control_characters_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    schedule = {
        "Name": "invoice\u202egnp.exe\x1b[2J",
        "ScheduleExpression": "rate(5 minutes)",
        "Target": {"Arn": "arn:aws:scheduler:::aws-sdk:s3:listBuckets"},
    }

    code, _, err = _import(capsys, tmp_path, "eventbridge", json.dumps(schedule).encode())

    assert code == 1  # refused, dry run or not
    assert len(err) == 2
    assert "\u202e" not in err[0] and "\x1b" not in err[0], (
        f"an import refusal prints bidi and control characters escaped: {err[0]!r}"
    )
    assert "invoice\\u202egnp.exe\\x1b[2J" in err[0]
