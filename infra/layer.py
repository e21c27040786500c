"""The takt Lambda layer: the locked runtime dependencies plus the `takt` package, built without
Docker.

Docker is not available here nor in CI, so the layer is bundled on the host: uv exports the
runtime set from uv.lock (the lock, not pyproject's ranges, is what we tested), and uv installs it
for the Lambda target (CPython 3.13 on Graviton) from binary wheels only, so nothing is compiled
for the host's architecture by mistake. The venv made by uv has no pip, and uv evaluates
environment markers for the target Python rather than for the one running the build, which is why
uv installs and pip does not.
"""

from __future__ import annotations

import hashlib
import importlib.util
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
_SKIPPED_PARTS = frozenset({"__pycache__"})


class LayerBuildError(RuntimeError):
    """The layer could not be built; the message says which step failed and why."""


def uv_command() -> list[str] | None:
    """How to run uv: from PATH (where CI puts it), else as a module of this interpreter."""
    found = shutil.which("uv")
    if found:
        return [found]
    if importlib.util.find_spec("uv") is not None:
        return [sys.executable, "-m", "uv"]
    return None


def _canonical(name: str) -> str:
    """PEP 503 normalisation, so `Boto3` or `typing_extensions` match their canonical names."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements(exported: str) -> list[str]:
    """The requirement lines of a `uv export` to install into the layer.

    Comments and blank lines go, and so do the packages the Lambda runtime provides.
    """
    kept = []
    for raw in exported.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name = re.split(r"[\s\[=<>!~;@]", line, maxsplit=1)[0]
        if _canonical(name) not in RUNTIME_PROVIDED:
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

    def __init__(self, project_root: Path) -> None:
        self._project_root = project_root

    # jsii passes the BundlingOptions struct as keyword arguments only when the method declares a
    # keyword-only parameter; without `image` here the call fails with a TypeError.
    def try_bundle(self, output_dir: str, *, image: DockerImage, **_options: object) -> bool:
        """Install the locked wheels and copy the package; True tells CDK not to use Docker."""
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
                    TARGET_PLATFORM,
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
