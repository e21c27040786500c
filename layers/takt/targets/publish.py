"""Queue-topic targets: publish the payload to an SQS queue, an SNS topic or an EventBridge bus.

Success is the service's acknowledgement (a message id, or an event entry without an error code).
Every message carries the job id, execution id, attempt and scheduled time: as message attributes
on SQS and SNS (`takt-job-id`, `takt-execution-id`, `takt-attempt`, `takt-scheduled-time`), and in
the event's `detail` on EventBridge, whose events have no attributes (the payload is then
`detail.payload`).

The execution id is the deduplication identity where the service has one: SQS FIFO queues and SNS
FIFO topics get it as `MessageDeduplicationId` (with the job id as `MessageGroupId`, which keeps a
job's runs in order), so a retry after a lost acknowledgement is dropped within the services'
five-minute window. Standard queues and topics, and EventBridge, which has no deduplication, may
deliver twice: consumers deduplicate on the execution id.

Throttling, server errors and network failures are retryable; any other refusal (no such queue,
access denied, bad request) is permanent: the job's definition needs fixing, after which
`takt executions retry` re-runs it. A target in another region than the deployment's is permanent
too: the API refuses such jobs at create time, this catches those stored before.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from takt.models.calls import CallContext, TargetResult
from takt.models.ids import format_time
from takt.models.targets import EventBusSpec, SnsSpec, SqsSpec

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

EVENT_SOURCE = "takt"
EVENT_DETAIL_TYPE = "takt.execution"
RETRYABLE_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "KMSThrottlingException",
        "InternalFailure",
        "InternalError",
        "InternalErrorException",
        "ServiceUnavailable",
        # Lambda: the function is being updated, or its VPC network is short of capacity.
        "ResourceConflictException",
        "EC2ThrottledException",
        # Step Functions: the account's open executions are at their quota.
        "ExecutionLimitExceeded",
    }
)


class QueueTopicTarget:
    def __init__(
        self, sqs: SQSClient, sns: SNSClient, events: EventBridgeClient, region: str
    ) -> None:
        self._sqs = sqs
        self._sns = sns
        self._events = events
        self._region = region
        self._queue_urls: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def call(self, spec: SqsSpec | SnsSpec | EventBusSpec, ctx: CallContext) -> TargetResult:
        if spec.region != self._region:
            return TargetResult(
                "permanent",
                error=f"target is in {spec.region}; this deployment publishes in {self._region}",
            )
        started = time.monotonic()
        try:
            if isinstance(spec, SqsSpec):
                self._send(spec, ctx)
            elif isinstance(spec, SnsSpec):
                self._publish(spec, ctx)
            else:
                failure = self._put_event(spec, ctx)
                if failure is not None:
                    return TargetResult(
                        "retryable" if failure[0] in RETRYABLE_CODES else "permanent",
                        error=f"{failure[0]}: {failure[1]}",
                        duration_ms=_elapsed(started),
                    )
        except (ClientError, BotoCoreError) as exc:
            return aws_error_result(exc, started)
        return TargetResult("success", duration_ms=_elapsed(started))

    def _send(self, spec: SqsSpec, ctx: CallContext) -> None:
        kwargs: dict[str, Any] = {
            "QueueUrl": spec.url or self._queue_url(spec),
            "MessageBody": _body(ctx),
            "MessageAttributes": _attributes(ctx),
        }
        if spec.fifo:
            kwargs["MessageGroupId"] = ctx.job_id
            kwargs["MessageDeduplicationId"] = ctx.execution_id
        self._sqs.send_message(**kwargs)

    def _queue_url(self, spec: SqsSpec) -> str:
        """The URL of a queue named by ARN, asked once per process (it never changes)."""
        key = (spec.account, spec.name)
        with self._lock:
            known = self._queue_urls.get(key)
        if known is not None:
            return known
        url = self._sqs.get_queue_url(QueueName=spec.name, QueueOwnerAWSAccountId=spec.account)[
            "QueueUrl"
        ]
        with self._lock:
            self._queue_urls[key] = url
        return url

    def _publish(self, spec: SnsSpec, ctx: CallContext) -> None:
        kwargs: dict[str, Any] = {
            "TopicArn": spec.arn,
            "Message": _body(ctx),
            "MessageAttributes": _attributes(ctx),
        }
        if spec.fifo:
            kwargs["MessageGroupId"] = ctx.job_id
            kwargs["MessageDeduplicationId"] = ctx.execution_id
        self._sns.publish(**kwargs)

    def _put_event(self, spec: EventBusSpec, ctx: CallContext) -> tuple[str, str] | None:
        """Put one event; (error code, message) when the bus refused the entry."""
        detail = envelope(ctx)
        resp = self._events.put_events(
            Entries=[
                {
                    "EventBusName": spec.arn,
                    "Source": EVENT_SOURCE,
                    "DetailType": EVENT_DETAIL_TYPE,
                    "Detail": json.dumps(detail, separators=(",", ":")),
                }
            ]
        )
        if resp.get("FailedEntryCount", 0) == 0:
            return None
        entry = resp["Entries"][0]
        return entry.get("ErrorCode", "Unknown"), entry.get("ErrorMessage", "")


def aws_error_result(exc: ClientError | BotoCoreError, started: float) -> TargetResult:
    """The outcome of an AWS call that raised: throttling, 5xx and the network are retryable,
    any other refusal (no such resource, access denied, a bad request) is permanent."""
    if isinstance(exc, BotoCoreError):
        return TargetResult(
            "retryable",
            error=f"connection failed: {exc.__class__.__name__}",
            duration_ms=_elapsed(started),
        )
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
    retryable = code in RETRYABLE_CODES or status >= 500 or status == 429
    return TargetResult(
        "retryable" if retryable else "permanent",
        status_code=status or None,
        error=f"{code}: {error.get('Message', '')}".strip(),
        duration_ms=_elapsed(started),
    )


def envelope(ctx: CallContext) -> dict[str, Any]:
    """The execution's identity beside its payload: what an EventBridge event's `detail`, a
    Lambda function's event and a state machine's input hold, none of which carry attributes."""
    return {
        "job_id": ctx.job_id,
        "execution_id": ctx.execution_id,
        "attempt": ctx.attempt,
        "scheduled_time": format_time(ctx.scheduled_time),
        "payload": ctx.payload,
    }


def _body(ctx: CallContext) -> str:
    return json.dumps(ctx.payload, separators=(",", ":"))


def _attributes(ctx: CallContext) -> dict[str, Any]:
    return {
        "takt-job-id": {"DataType": "String", "StringValue": ctx.job_id},
        "takt-execution-id": {"DataType": "String", "StringValue": ctx.execution_id},
        "takt-attempt": {"DataType": "Number", "StringValue": str(ctx.attempt)},
        "takt-scheduled-time": {
            "DataType": "String",
            "StringValue": format_time(ctx.scheduled_time),
        },
    }


def _elapsed(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
