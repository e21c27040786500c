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

The interpreter gets the variables Lambda sets that change what an import does: the function's
name and `LAMBDA_TASK_ROOT` (its folder, Lambda's /var/task). The X-Ray SDK, which Powertools'
Tracer imports, picks its sampler by the latter: outside Lambda it builds a botocore X-Ray client
at import (loading the SDK's endpoint and service data), which no function in Lambda does; without
it every handler's figure held CPU that Lambda never spends (medians of 5 runs, 2026-12-05, load
average 2-3: the api 0.472 s without it and 0.366 s with it, the others 0.375-0.386 s and
0.262-0.287 s; its first request then took 0.108 s and the next 0.010 s).

`--first-request` also measures the API's first request after its import, the create of
events/api_create_job.json, and the list of jobs after it, in the same interpreter, against a
moto server on 127.0.0.1 with takt's tables (what the API defers from its import, that request
pays).
"""

from __future__ import annotations

import argparse
import json
import logging
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

FIRST_REQUEST = """
import json, sys, time, uuid
sys.path[:0] = sys.argv[1].split(":")


class Context:
    function_name = "takt-api"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:takt-api"
    function_version = "$LATEST"
    log_group_name = "/aws/lambda/takt-api"
    aws_request_id = str(uuid.uuid4())

    def get_remaining_time_in_millis(self):
        return 10_000


started = time.process_time()
import handler
imported = time.process_time()
create = json.loads(open(sys.argv[2]).read())
answer = handler.handler(create, Context())
created = time.process_time()
listing = dict(create, body=None, rawPath="/v1/jobs")
listing["requestContext"] = dict(create["requestContext"], http=dict(
    create["requestContext"]["http"], method="GET", path="/v1/jobs"))
listed = handler.handler(listing, Context())
done = time.process_time()
print(json.dumps({
    "import_cpu_sec": imported - started,
    "first_request_cpu_sec": created - imported,
    "first_request_status": answer["statusCode"],
    "second_request_cpu_sec": done - created,
    "second_request_status": listed["statusCode"],
}))
"""

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


def lambda_environment(task: Path) -> dict[str, str]:
    """The variables Lambda sets that an import reads (module docstring)."""
    return {
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_LAMBDA_FUNCTION_NAME": "cold-start-bench",
        "LAMBDA_TASK_ROOT": str(task),
        "PATH": os.environ.get("PATH", ""),
    }


def measure(python: str, path: list[Path], mode: str, cwd: Path) -> dict[str, object]:
    done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell
        [python, "-I", "-c", PROBE, ":".join(str(part) for part in path), mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env=lambda_environment(cwd),
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def first_requests(python: str, path: list[Path], task: Path, runs: int) -> dict[str, object]:
    """The API's import and its first two requests, `runs` times, each in a fresh interpreter
    on fresh tables of one moto server (module docstring)."""
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 - only this option needs moto

    from takt.aws import make_clients  # noqa: PLC0415
    from takt.config import Settings  # noqa: PLC0415
    from takt.resources import TABLES  # noqa: PLC0415
    from takt_cli.local.provision import provision  # noqa: PLC0415
    from takt_cli.local.runtime import free_port  # noqa: PLC0415

    # The server's own request log would bury the report.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    os.environ.update(credentials)
    samples: list[dict[str, object]] = []
    try:
        for run in range(runs):
            prefix = f"bench{run}"
            settings = Settings(
                aws_endpoint_url=endpoint,
                **{spec.setting: f"{prefix}-{spec.setting}" for spec in TABLES},
            )
            tables = provision(make_clients(settings), settings, prefix)
            environment = {
                **lambda_environment(task),
                **credentials,
                **tables,
                "TAKT_AWS_ENDPOINT_URL": endpoint,
                # A sampled trace, as an API request in a traced deployment carries.
                "_X_AMZN_TRACE_ID": "Root=1-67a1b2c3-0123456789abcdef01234567;"
                "Parent=53995c3f42cd8ad8;Sampled=1",
            }
            done = subprocess.run(  # noqa: S603 - a fixed argument list, no shell
                [
                    python,
                    "-I",
                    "-c",
                    FIRST_REQUEST,
                    ":".join(str(part) for part in path),
                    str(PROJECT_ROOT / "events" / "api_create_job.json"),
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=task,
                env=environment,
            )
            samples.append(json.loads(done.stdout.splitlines()[-1]))
    finally:
        server.stop()
    summary: dict[str, object] = {
        "statuses": sorted(
            {(s["first_request_status"], s["second_request_status"]) for s in samples}
        ),
    }
    for key in ("import_cpu_sec", "first_request_cpu_sec", "second_request_cpu_sec"):
        values = [float(str(sample[key])) for sample in samples]
        summary[key] = {
            "median": round(statistics.median(values), 3),
            "max": round(max(values), 3),
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the report as JSON here")
    parser.add_argument(
        "--first-request",
        action="store_true",
        help="also measure the API's first requests after its import (module docstring)",
    )
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
        if options.first_request:
            task = PROJECT_ROOT / "functions" / "api"
            requests = first_requests(python, [task, layer_dir / "python", sdk], task, options.runs)
            print("api first requests", json.dumps(requests), flush=True)
            report["api_first_requests"] = requests
        report["load_average_after"] = os.getloadavg()
    if options.out:
        options.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
