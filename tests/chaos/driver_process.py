"""One per-second driver in a process of its own, as one Lambda invocation of the scheduler runs:
the real handler, with a context whose timeout makes it stop after `LIFE_SEC`.

    python -m tests.chaos.driver_process LIFE_SEC [EVENT_TIME]

The settings come from `TAKT_*` variables (`takt.local.runtime.worker_env` and the claimer
mode). EVENT_TIME, when given, is the minute rule event's `time` this driver was started for,
so a second start for the same time returns at once. The process prints `ready` once the handler
is imported, the handler's JSON log lines (one `tick` line per second it won with something due),
and its result.
"""

from __future__ import annotations

import json
import sys
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.scheduler.handler import STOP_BEFORE_END_MS, handler
from takt.local.events import LocalContext


def main(argv: list[str]) -> None:
    life_ms = int(float(argv[1]) * 1000)
    event: dict[str, Any] = {"detail-type": "Scheduled Event"}
    if len(argv) > 2:
        event["time"] = argv[2]
    context = LocalContext("takt-scheduler", timeout_ms=life_ms + STOP_BEFORE_END_MS)
    print("ready", flush=True)
    result = handler(event, cast(LambdaContext, context))
    print(json.dumps({"result": result}), flush=True)


if __name__ == "__main__":
    main(sys.argv)
