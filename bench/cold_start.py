"""The CPU each Lambda handler spends importing itself at a cold start, loaded from its built
assets as Lambda loads them, under the runtime's Python (3.13).

    .venv/bin/python bench/cold_start.py --runs 7

It builds the layer with the CDK app's own recipe (`infra.layer.LayerBundler`: uv.lock's runtime
set, the `takt` package, bytecode compiled by Python 3.13), for x86-64 instead of Graviton so that
its native wheels (pydantic-core) load on this machine, and installs the SDK the runtime provides
(uv.lock's boto3, botocore, s3transfer, jmespath and urllib3, compiled too) in a folder of its own.
Then, for each function, it starts a fresh isolated interpreter (`-I`) whose path is the
function's folder (/var/task), the layer's `python/` (/opt/python) and the SDK, and measures the
process CPU time of `import handler`: with nothing imported before it (`total`), and after
`import boto3` (`beyond_boto3`, takt's own share). It prints the median and maximum of `--runs`
runs of each, how many modules the import loaded, and whether it loaded `takt.api`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [
    str(Path(__file__).resolve().parents[1]),
    str(Path(__file__).resolve().parents[1] / "layers"),
]

from infra.layer import (  # noqa: E402
    PROJECT_ROOT,
    RUNTIME,
    RUNTIME_PROVIDED,
    LayerBundler,
    compile_bytecode,
    runtime_python,
    uv_command,
)

PLATFORM = "x86_64-manylinux2014"
BUDGET_SEC = 0.4

PROBE = """
import json, sys, time
sys.path[:0] = sys.argv[1].split(":")
started = time.process_time()
if sys.argv[2] == "after-boto3":
    import boto3
    started = time.process_time()
before = len(sys.modules)
import handler
print(json.dumps({
    "cpu_sec": time.process_time() - started,
    "modules": len(sys.modules) - before,
    "imports_api": any(name.startswith("takt.api") for name in sys.modules),
}))
"""


def sdk_requirements() -> list[str]:
    """The lock's pins of the packages the Lambda runtime provides."""
    lock = (PROJECT_ROOT / "uv.lock").read_text()
    pins = []
    for block in lock.split("[[package]]"):
        fields = dict(line.split(" = ", 1) for line in block.strip().splitlines() if " = " in line)
        name = fields.get("name", "").strip('"')
        if name in RUNTIME_PROVIDED:
            pins.append(f"{name}=={fields['version'].strip(chr(34))}")
    return pins


def install_sdk(python: str, into: Path) -> None:
    uv = uv_command()
    if uv is None:
        raise SystemExit("cold_start: uv is needed (make test puts .tools/bin on PATH)")
    subprocess.run(  # noqa: S603 - a fixed argument list, no shell
        [
            *uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            python,
            "--target",
            str(into),
            "--no-deps",
            *sdk_requirements(),
        ],
        check=True,
    )
    compile_bytecode(into, python)


def measure(python: str, path: list[Path], mode: str, cwd: Path) -> dict[str, object]:
    environment = {
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "cold-start-bench",
        "PATH": os.environ.get("PATH", ""),
    }
    done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell
        [python, "-I", "-c", PROBE, ":".join(str(part) for part in path), mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env=environment,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the report as JSON here")
    options = parser.parse_args()
    python = runtime_python()
    if python is None:
        raise SystemExit("cold_start: Python 3.13 is needed (set TAKT_LAYER_PYTHON)")
    functions = sorted(
        path.parent.name for path in (PROJECT_ROOT / "functions").glob("*/handler.py")
    )
    with tempfile.TemporaryDirectory() as scratch:
        layer_dir, sdk = Path(scratch) / "layer", Path(scratch) / "sdk"
        layer_dir.mkdir()
        LayerBundler(PROJECT_ROOT, PLATFORM).try_bundle(
            str(layer_dir), image=RUNTIME.bundling_image
        )
        install_sdk(python, sdk)
        report: dict[str, object] = {
            "python": python,
            "platform": PLATFORM,
            "runs": options.runs,
            "load_average": os.getloadavg(),
            "budget_cpu_sec": BUDGET_SEC,
            "functions": {},
        }
        rows: dict[str, object] = {}
        for function in functions:
            task = PROJECT_ROOT / "functions" / function
            path = [task, layer_dir / "python", sdk]
            row: dict[str, object] = {}
            for mode in ("total", "after-boto3"):
                runs = [measure(python, path, mode, task) for _ in range(options.runs)]
                cpu = [float(str(run["cpu_sec"])) for run in runs]
                row[mode] = {
                    "median_cpu_sec": round(statistics.median(cpu), 3),
                    "max_cpu_sec": round(max(cpu), 3),
                }
                row["modules_" + mode] = runs[0]["modules"]
                row["imports_api"] = runs[0]["imports_api"]
            rows[function] = row
            print(function, json.dumps(row), flush=True)
        report["functions"] = rows
        report["load_average_after"] = os.getloadavg()
    if options.out:
        options.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
