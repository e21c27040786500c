"""One per-second driver in a process of its own, as one Lambda invocation of the scheduler runs:
the real handler, with a context whose timeout makes it stop after `LIFE_SEC`.

    python -m tests.chaos.driver_process LIFE_SEC [EVENT_TIME]

The settings come from `TAKT_*` variables (`takt_cli.local.runtime.worker_env` and the claimer
mode). The process imports the handler, prints `ready`, reads from its standard input the
instant (epoch seconds) to invoke it at, and does so then, as a warm Lambda environment would be
invoked: a process start on a loaded machine takes far longer than a cold start, and the
schedule should not depend on it.
EVENT_TIME, when given, is the minute rule event's `time` this driver was started for, so a second
start for the same time returns at once. Then come the handler's JSON log lines (one `tick` line
per second it won with something due) and its result.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.scheduler.handler import STOP_BEFORE_END_MS, handler
from takt_cli.local.events import LocalContext


def main(argv: list[str]) -> None:
    life_ms = int(float(argv[1]) * 1000)
    event: dict[str, Any] = {"detail-type": "Scheduled Event"}
    if len(argv) > 2:
        event["time"] = argv[2]
    print("ready", flush=True)
    time.sleep(max(0.0, float(sys.stdin.readline()) - time.time()))
    context = LocalContext("takt-scheduler", timeout_ms=life_ms + STOP_BEFORE_END_MS)
    result = handler(event, cast(LambdaContext, context))
    print(json.dumps({"result": result}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
