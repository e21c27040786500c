"""The processes tests start import the checkout they run from (`make mutants` runs the tests in a
copy of the code, and a mutation only a subprocess would show must reach that subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.env import checkout_pythonpath

ROOT = Path(__file__).resolve().parents[2]


def test_every_entry_of_a_started_process_s_pythonpath_is_a_folder_of_the_checkout() -> None:
    entries = [Path(entry) for entry in checkout_pythonpath(ROOT).split(os.pathsep)]

    missing = [str(entry) for entry in entries if not entry.is_dir()]
    assert missing == [], f"a started process would not import the checkout from {missing}"


def test_a_started_process_imports_takt_and_its_cli_from_the_checkout_it_was_given(
    tmp_path: Path,
) -> None:
    """A copy of the checkout's packages (as `make mutants` makes) is what the process imports."""
    for package in ("layers/takt", "cli/takt_cli"):
        (tmp_path / package).mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": checkout_pythonpath(tmp_path)}

    found = subprocess.run(
        [sys.executable, "-c", "import takt, takt_cli; print(takt.__file__, takt_cli.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.split()

    assert found == [
        str(tmp_path / "layers/takt/__init__.py"),
        str(tmp_path / "cli/takt_cli/__init__.py"),
    ], "a process started from a copy of the code imported another checkout's takt"
