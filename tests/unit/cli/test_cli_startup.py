"""`takt --help` loads no command: no boto3, moto or pydantic at start-up (their imports are
most of a second of CPU; bench/cli_startup.py measures the CPU itself)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from takt_cli.commands.main import COMMANDS, cli

HEAVY = ("boto3", "botocore", "moto", "pydantic", "aws_lambda_powertools")

PROBE = """
import contextlib, io, json, sys
from takt_cli.commands.main import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def loaded_by(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout)
    assert result["code"] == 0
    modules: list[str] = result["modules"]
    return modules


@pytest.mark.parametrize("args", [("--help",), ("local", "--help"), ("jobs", "--help")])
def test_help_imports_no_aws_sdk_moto_or_pydantic(args: tuple[str, ...]) -> None:
    heavy = [m for m in loaded_by(*args) if m.split(".")[0] in HEAVY]

    assert heavy == []


def test_help_loads_no_command_module() -> None:
    loaded = [
        m
        for m in loaded_by("--help")
        if m.startswith("takt_cli.commands.") and m != "takt_cli.commands.main"
    ]

    assert loaded == ["takt_cli.commands.errors"]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_summary_in_the_root_help_is_the_command_s_own(name: str) -> None:
    command = cli.get_command(None, name)  # type: ignore[arg-type]

    assert command is not None
    assert command.get_short_help_str(limit=200) == COMMANDS[name][1]
