"""The wheel as a user installs it, in a fresh virtualenv outside the checkout: the runtime library
(`takt`) and the tooling (`takt_cli`) are its two packages, the handlers and the console travel
inside the tooling (no top-level `functions`), `pip install takt` alone gives a `takt` that says
in one line which extra it needs, and `takt[local]` gives one that runs `takt local`."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from takt_cli.local.runtime import free_port
from tests.support.threads import poll_until

ROOT = Path(__file__).resolve().parents[2]
UV = shutil.which("uv")
pytestmark = pytest.mark.skipif(UV is None, reason="uv is not on PATH (make test puts it there)")


def uv(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert UV is not None
    return subprocess.run(
        [UV, "--color", "never", *args], cwd=cwd, check=True, capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    uv("build", "--wheel", "--out-dir", str(out), "--quiet", cwd=ROOT)
    return next(out.glob("takt-*.whl"))


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    place = tmp_path_factory.mktemp("venv")
    uv("venv", "--quiet", "--python", "3.11", str(place / "env"), cwd=place)
    return place / "env"


def install(venv: Path, requirement: str) -> None:
    uv("pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), requirement, cwd=venv)


def test_the_wheel_holds_the_library_and_the_tooling_and_no_top_level_functions(
    wheel: Path,
) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names if not name.startswith("takt-")}

    assert tops == {"takt", "takt_cli"}
    assert "takt_cli/functions/worker/handler.py" in names
    assert "takt_cli/console/index.html" in names
    assert "takt_cli/openapi.json" in names, "the CLI's job flags read the API's contract"
    assert "takt_cli/profiles.json" in names, (
        "takt bench simulate --profile-name reads the profiles"
    )
    assert not [n for n in names if n.startswith(("takt/cli/", "takt/local/", "takt/capacity/"))]


def test_pip_install_takt_is_the_cli_for_a_deployed_api_and_takt_local_names_its_extra(
    wheel: Path, venv: Path
) -> None:
    """Installs by role: the plain install has every command that talks to an API (no moto, no
    CDK); `takt local` alone needs the `local` extra, and says so in one line."""
    install(venv, str(wheel))
    takt = str(venv / "bin" / "takt")

    helped = subprocess.run(
        [takt, "jobs", "create", "--help"], capture_output=True, text=True, check=False
    )
    local = subprocess.run([takt, "local"], capture_output=True, text=True, check=False)
    has = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.util as u; "
            "print([m for m in ('moto', 'aws_cdk', 'pytest') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )

    assert helped.returncode == 0, helped.stderr
    assert "--overlap" in helped.stdout
    assert has.stdout.strip() == "[]"
    assert local.returncode == 2
    assert local.stderr.splitlines() == [
        "takt: the command needs the 'local' extra (moto is missing): pip install 'takt[local]'"
    ]


@pytest.fixture
def installed_local(wheel: Path, venv: Path, tmp_path: Path) -> Iterator[str]:
    """`takt local` of the installed wheel, run from a folder outside the checkout; its URL."""
    install(venv, f"takt[local] @ {wheel.as_uri()}")
    port = free_port()
    log = tmp_path / "takt-local.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(venv / "bin" / "takt"), "local", "--port", str(port), "--in-memory"],
            cwd=tmp_path,
            env={"PATH": str(venv / "bin"), "HOME": str(tmp_path)},
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def serving() -> bool:
        if process.poll() is not None:
            pytest.fail(f"takt local exited: {log.read_text()}")
        try:
            urllib.request.urlopen(f"{url}/v1/jobs", timeout=2).close()
        except OSError:
            return False
        return True

    try:
        poll_until(serving, "takt local of the installed wheel serving its API", 60)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_with_the_local_extra_takt_local_serves_the_api_and_the_console(
    installed_local: str,
) -> None:
    request = urllib.request.Request(
        f"{installed_local}/v1/jobs",
        data=json.dumps({"interval": "1h", "target": "http://127.0.0.1:9/hook"}).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as created:
        job = json.load(created)
    with urllib.request.urlopen(f"{installed_local}/", timeout=10) as console:
        page = console.read().decode()

    assert job["id"].startswith("job_")
    assert "<title>" in page
