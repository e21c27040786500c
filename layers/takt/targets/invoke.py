"""AWS Lambda and Step Functions targets: invoke a function, or start a state machine.

Both receive the execution's envelope (`job_id`, `execution_id`, `attempt`, `scheduled_time`,
`payload`) as their event or input, since neither call carries attributes: a receiver dedupes on
`execution_id`.

**Lambda, synchronous** (`RequestResponse`, the bare function ARN): the function's own answer is
the outcome. It succeeds when the function returns; a function error (`FunctionError` in the
answer: an exception, a timeout, running out of memory) is a retryable failed attempt, with the
function's `errorType: errorMessage` as its error. The call waits at most the job's timeout:
the client's read timeout is the execution's `timeout_sec`, and the client never retries an
invocation itself (a retry after a read timeout would run the function twice at once); throttling
and 5xx come back as retryable outcomes, and takt's backoff retries them.

**Lambda, asynchronous** (`Event`): success is Lambda's acceptance (202); what the function then
does is Lambda's affair (its own retries and destinations). A lost acceptance retried may queue
the event twice: the function dedupes on `execution_id`.

**Step Functions** (`StartExecution`): the execution is named from takt's execution id and attempt
(`takt-<execution id>-<attempt>`), so a retry of one attempt after a lost answer names the same
execution: a Standard state machine answers with the running execution, or
`ExecutionAlreadyExists` once it closed, which is that attempt's own start and so a success. A
new attempt starts a new execution. Success is the start, not the state machine's result.

Refusals follow `takt.targets.publish.aws_error_result`: throttling, 5xx and the network are
retryable, anything else (no such function, access denied) permanent. A function or state
machine in another region than the deployment's is permanent, as for queue-topic targets.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.models.calls import CallContext, TargetResult
from takt.models.targets import LambdaSpec, StateMachineSpec
from takt.targets.publish import aws_error_result, envelope

MAX_ERROR_CHARS = 500
# Step Functions' limit on an execution name, and the characters it allows without escaping.
MAX_EXECUTION_NAME = 80
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# A synchronous invocation's clients, by read timeout: at most this many are kept.
MAX_TIMEOUT_CLIENTS = 8
# Seconds beyond the job's timeout that the read timeout allows, so the function's own answer
# (a timeout error, say) arrives before the socket gives up.
READ_TIMEOUT_SLACK_SEC = 2


def state_machine_execution_name(execution_id: str, attempt: int) -> str:
    """The Step Functions execution name of one attempt: deterministic, so a retried call of the
    same attempt names the same execution; a digest when the plain form would be too long."""
    name = f"takt-{_NAME_UNSAFE.sub('_', execution_id)}-{attempt}"
    if len(name) <= MAX_EXECUTION_NAME:
        return name
    digest = hashlib.sha256(f"{execution_id}/{attempt}".encode()).hexdigest()[:40]
    return f"takt-{digest}-{attempt}"


class AwsInvokeTarget:
    """Calls Lambda and Step Functions targets with the deployment's clients.

    `lambda_client(read_timeout_sec)` makes a Lambda client that does not retry and waits that
    long for an answer (`takt.aws.make_lambda_client`); `event_client` is for asynchronous
    invocations, whose retries are harmless; `states` starts executions.
    """

    def __init__(
        self,
        lambda_client: Callable[[int | None], Any],
        states: Callable[[], Any],
        region: str,
    ) -> None:
        self._lambda_client = lambda_client
        self._states_factory = states
        self._region = region
        self._clients: OrderedDict[int | None, Any] = OrderedDict()
        self._states: Any = None
        self._lock = threading.Lock()

    def call(self, spec: LambdaSpec | StateMachineSpec, ctx: CallContext) -> TargetResult:
        if spec.region != self._region:
            return TargetResult(
                "permanent",
                error=f"target is in {spec.region}; this deployment calls {self._region}",
            )
        started = time.monotonic()
        body = json.dumps(envelope(ctx), separators=(",", ":"))
        try:
            if isinstance(spec, StateMachineSpec):
                return self._start(spec, ctx, body, started)
            return self._invoke(spec, ctx, body, started)
        except (ClientError, BotoCoreError) as exc:
            if isinstance(exc, ClientError) and isinstance(spec, StateMachineSpec):
                code = exc.response.get("Error", {}).get("Code")
                if code == "ExecutionAlreadyExists":
                    # Only this attempt's own earlier call uses its name (above).
                    return TargetResult("success", duration_ms=_elapsed(started))
            return aws_error_result(exc, started)

    def _invoke(
        self, spec: LambdaSpec, ctx: CallContext, body: str, started: float
    ) -> TargetResult:
        sync = spec.invocation == "RequestResponse"
        timeout = math.ceil(ctx.timeout_sec) + READ_TIMEOUT_SLACK_SEC if sync else None
        resp = self._client(timeout).invoke(
            FunctionName=spec.arn, InvocationType=spec.invocation, Payload=body.encode()
        )
        status = int(resp.get("StatusCode", 0))
        if resp.get("FunctionError"):
            return TargetResult(
                "retryable",
                status_code=status or None,
                error=_function_error(resp["FunctionError"], resp.get("Payload")),
                duration_ms=_elapsed(started),
            )
        return TargetResult("success", status_code=status or None, duration_ms=_elapsed(started))

    def _start(
        self, spec: StateMachineSpec, ctx: CallContext, body: str, started: float
    ) -> TargetResult:
        with self._lock:
            if self._states is None:
                self._states = self._states_factory()
            states = self._states
        states.start_execution(
            stateMachineArn=spec.arn,
            name=state_machine_execution_name(ctx.execution_id, ctx.attempt),
            input=body,
        )
        return TargetResult("success", duration_ms=_elapsed(started))

    def _client(self, read_timeout: int | None) -> Any:
        """The Lambda client for a read timeout (None: asynchronous calls), made once each."""
        with self._lock:
            client = self._clients.get(read_timeout)
            if client is None:
                client = self._lambda_client(read_timeout)
                self._clients[read_timeout] = client
                if len(self._clients) > MAX_TIMEOUT_CLIENTS:
                    self._clients.popitem(last=False)
            else:
                self._clients.move_to_end(read_timeout)
            return client


def _function_error(kind: str, payload: Any) -> str:
    """`errorType: errorMessage` from a failed function's answer, clipped; its kind otherwise."""
    raw = payload.read() if payload is not None else b""
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    text = f"function error ({kind})"
    if isinstance(answer, dict) and ("errorType" in answer or "errorMessage" in answer):
        text += f": {answer.get('errorType', 'Error')}: {answer.get('errorMessage', '')}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
