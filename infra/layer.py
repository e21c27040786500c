"""The takt Lambda layer: the locked runtime dependencies plus the `takt` package, built without
Docker, with bytecode.

Docker is not available here nor in CI, so the layer is bundled on the host: uv exports the
runtime set from uv.lock (the lock, not pyproject's ranges, is what we tested), and uv installs it
for the Lambda target (CPython 3.13 on Graviton) from binary wheels only, so nothing is compiled
for the host's architecture by mistake. The venv made by uv has no pip, and uv evaluates
environment markers for the target Python rather than for the one running the build, which is why
uv installs and pip does not.

The layer ships bytecode compiled by the runtime's own Python version (`runtime_python`): the
runtime's code directories are read-only, so a layer without `.pyc` files compiles every module
it imports on every cold start, and a `.pyc` of another version is ignored. The bytecode is
`unchecked-hash`: it records no source timestamp, so it stays valid whatever times the asset's zip
gives the files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import jsii
from aws_cdk import AssetHashType, BundlingOptions, DockerImage, ILocalBundling
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The runtime library only: the tooling (cli/takt_cli) is never in the layer, and the layer's
# `python/` prefix is made here, at build time, not kept in the source tree.
LAYER_PACKAGE = PROJECT_ROOT / "layers" / "takt"
RUNTIME = lambda_.Runtime.PYTHON_3_13
ARCHITECTURE = lambda_.Architecture.ARM_64
# uv's name for Graviton Lambda: Amazon Linux 2023's glibc 2.34 runs any manylinux2014 (2.17) wheel.
TARGET_PLATFORM = "aarch64-manylinux2014"
TARGET_PYTHON = RUNTIME.name.removeprefix("python")
# The Lambda runtime ships boto3 with these; the layer sits before the runtime on sys.path, so a
# copy here would shadow AWS's patched SDK with our lock's, and split botocore from the urllib3,
# jmespath and s3transfer it was released with.
RUNTIME_PROVIDED = frozenset({"boto3", "botocore", "s3transfer", "jmespath", "urllib3"})
# The CLI's own dependencies, in `pip install takt` for the command but never imported by a
# function: the layer leaves them out.
TOOLING_ONLY = frozenset({"click", "pyyaml"})
_SKIPPED_PARTS = frozenset({"__pycache__"})


class LayerBuildError(RuntimeError):
    """The layer could not be built; the message says which step failed and why."""


def uv_command() -> list[str] | None:
    """How to run uv: from PATH (where CI puts it), else where `make install` put it, else as a
    module of this interpreter."""
    found = shutil.which("uv")
    if found:
        return [found]
    installed = PROJECT_ROOT / ".tools" / "bin" / "uv"
    if installed.exists():
        return [str(installed)]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    return None


def _python_version(python: str) -> str | None:
    """The `major.minor` of the interpreter at `python`, or None when it does not run."""
    try:
        done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell, no user input
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def runtime_python(version: str = TARGET_PYTHON) -> str | None:
    """An interpreter of the Lambda runtime's Python version, to compile the layer's bytecode:
    `TAKT_LAYER_PYTHON`, else `python3.13` on PATH, else one that pyenv installed (a pyenv shim
    on PATH runs only the version pyenv selects, so its versions are looked up directly)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [
        os.environ.get("TAKT_LAYER_PYTHON"),
        shutil.which(f"python{version}"),
        *(str(path) for path in sorted(pyenv.glob(f"{version}*/bin/python{version}"))),
    ]
    for candidate in candidates:
        if candidate and _python_version(candidate) == version:
            return candidate
    return None


def compile_bytecode(site: Path, python: str | None) -> None:
    """Compile every module under `site` with the runtime's Python, or say what is missing."""
    if python is None:
        raise LayerBuildError(
            f"Python {TARGET_PYTHON} is needed to compile the layer's bytecode for the Lambda "
            f"runtime: install it, or set TAKT_LAYER_PYTHON to its path"
        )
    options = ["-q", "-j", "0", "--invalidation-mode", "unchecked-hash"]
    _run(
        [python, "-m", "compileall", *options, str(site)],
        cwd=site,
        step="compileall",
    )


def _canonical(name: str) -> str:
    """PEP 503 normalisation, so `Boto3` or `typing_extensions` match their canonical names."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements(exported: str) -> list[str]:
    """The requirement lines of a `uv export` to install into the layer.

    Comments and blank lines go, and so do the packages the Lambda runtime provides and the
    CLI's own.
    """
    kept = []
    for raw in exported.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name = re.split(r"[\s\[=<>!~;@]", line, maxsplit=1)[0]
        if _canonical(name) not in RUNTIME_PROVIDED | TOOLING_ONLY:
            kept.append(line)
    return kept


def _run(command: list[str], *, cwd: Path, step: str) -> str:
    try:
        result = subprocess.run(  # noqa: S603 - a fixed argument list, no shell, no user input
            command, cwd=cwd, check=True, capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError) as error:
        detail = error.stderr if isinstance(error, subprocess.CalledProcessError) else error
        raise LayerBuildError(f"{step} failed: {detail}") from error
    return result.stdout


def _uv() -> list[str]:
    uv = uv_command()
    if uv is None:
        raise LayerBuildError("uv is needed to build the layer: put it on PATH or pip-install it")
    # The CDK CLI forces colour on its child processes; coloured requirement lines are not
    # requirements, and uv would then reject its own export.
    return [*uv, "--color", "never"]


def export_requirements(project_root: Path) -> list[str]:
    """The layer's requirements: uv.lock's runtime set, without the runtime-provided packages."""
    exported = _run(
        [*_uv(), "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project"],
        cwd=project_root,
        step="uv export",
    )
    return runtime_requirements(exported)


def _package_files() -> Iterator[Path]:
    """The files of the `takt` package that ship, in a stable order (no bytecode caches)."""
    for path in sorted(LAYER_PACKAGE.rglob("*")):
        relative = path.relative_to(LAYER_PACKAGE)
        if path.is_file() and not _SKIPPED_PARTS.intersection(relative.parts):
            yield path


def layer_fingerprint(project_root: Path) -> str:
    """The layer's asset hash: the lock, the package's files, and this build recipe.

    A custom hash lets CDK skip bundling when cdk.out already holds this exact layer, and it
    changes with anything that changes the layer's contents, including a dependency bump that
    touches only uv.lock.
    """
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    digest.update((project_root / "uv.lock").read_bytes())
    for path in _package_files():
        digest.update(path.relative_to(LAYER_PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@jsii.implements(ILocalBundling)
class LayerBundler:
    """Builds the layer's `python/` folder on the host, which CDK tries before Docker."""

    def __init__(self, project_root: Path, platform: str = TARGET_PLATFORM) -> None:
        # Only the cold-start benchmark (bench/cold_start.py) builds for another platform: the
        # same layer, importable on the x86-64 machine that measures it.
        self._project_root = project_root
        self._platform = platform

    # jsii passes the BundlingOptions struct as keyword arguments only when the method declares a
    # keyword-only parameter; without `image` here the call fails with a TypeError.
    def try_bundle(self, output_dir: str, *, image: DockerImage, **_options: object) -> bool:
        """Install the locked wheels, copy the package and compile it all; True tells CDK not to
        use Docker."""
        site = Path(output_dir) / "python"
        with tempfile.TemporaryDirectory() as scratch:
            requirements = Path(scratch) / "requirements.txt"
            requirements.write_text("\n".join(export_requirements(self._project_root)) + "\n")
            _run(
                [
                    *_uv(),
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    sys.executable,
                    "--target",
                    str(site),
                    "--python-platform",
                    self._platform,
                    "--python-version",
                    TARGET_PYTHON,
                    "--only-binary",
                    ":all:",
                    # The lock already resolved everything; without this, aws-xray-sdk would
                    # pull botocore back in.
                    "--no-deps",
                    "--link-mode",
                    "copy",
                    "--requirement",
                    str(requirements),
                ],
                cwd=self._project_root,
                step="uv pip install",
            )
        for path in _package_files():
            destination = site / "takt" / path.relative_to(LAYER_PACKAGE)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
        compile_bytecode(site, runtime_python())
        return True


def takt_layer(scope: Construct, construct_id: str) -> lambda_.LayerVersion:
    """The layer every function uses.

    The Docker image is required by the API but never pulled: the local bundler either builds the
    layer or raises, so a machine without uv fails loudly instead of falling back to Docker.
    """
    return lambda_.LayerVersion(
        scope,
        construct_id,
        code=lambda_.Code.from_asset(
            str(LAYER_PACKAGE.parent),
            asset_hash=layer_fingerprint(PROJECT_ROOT),
            asset_hash_type=AssetHashType.CUSTOM,
            bundling=BundlingOptions(
                image=RUNTIME.bundling_image, local=LayerBundler(PROJECT_ROOT)
            ),
        ),
        compatible_runtimes=[RUNTIME],
        compatible_architectures=[ARCHITECTURE],
        description="takt and its locked dependencies; boto3 comes from the Lambda runtime",
    )
