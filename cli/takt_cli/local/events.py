"""AWS event shapes the local runtime builds: API Gateway HTTP API requests, SQS batches, and a
Lambda context, so the handlers run exactly as they do on AWS."""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class LocalContext:
    """The part of Lambda's context object that takt and Powertools read."""

    function_name: str
    timeout_ms: int = 60_000
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:us-east-1:000000000000:function:{self.function_name}"

    @property
    def function_version(self) -> str:
        return "$LATEST"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.timeout_ms - int((time.monotonic() - self.started) * 1000))


@dataclass(frozen=True)
class LocalIdentity:
    """Who every local API call comes from: a JWT caller with these claims, read by the same
    identity mapping (`takt.api.identity`) as a deployed API's callers."""

    tenant: str = "local"
    role: str = "admin"
    subject: str = "local-user"
    tenant_claim: str = "tenant"
    role_claim: str = "takt_role"

    def claims(self) -> dict[str, str]:
        return {self.tenant_claim: self.tenant, self.role_claim: self.role, "sub": self.subject}


def http_api_event(
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    identity: LocalIdentity,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event, with the local identity as JWT claims."""
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    lowered = {k.lower(): v for k, v in headers.items()}
    now = time.time()
    text, encoded = _body_text(body)
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": lowered,
        "queryStringParameters": query or None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": lowered.get("host", "127.0.0.1"),
            "http": {
                "method": method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "authorizer": {"jwt": {"claims": identity.claims(), "scopes": None}},
            "requestId": str(uuid.uuid4()),
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "body": text,
        "isBase64Encoded": encoded,
    }


def _body_text(body: bytes) -> tuple[str | None, bool]:
    """The event's body and whether it is base64, as API Gateway sends them: text as it came,
    and a body that is not UTF-8 base64-encoded, so the API sees the bytes it was sent (decoding
    with replacement characters stored U+FFFD in place of what the caller sent)."""
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def dynamodb_stream_event(stream_arn: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """A DynamoDB stream batch, as Lambda's event source mapping delivers `GetRecords`' records."""
    delivered = []
    for record in records:
        change = dict(record["dynamodb"])
        created = change.get("ApproximateCreationDateTime")
        if isinstance(created, datetime):
            change["ApproximateCreationDateTime"] = int(created.timestamp())
        delivered.append(
            {
                **{k: v for k, v in record.items() if k != "dynamodb"},
                "dynamodb": change,
                "eventSource": "aws:dynamodb",
                "eventSourceARN": stream_arn,
            }
        )
    return {"Records": delivered}


def sqs_event(queue_arn: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """An SQS event source batch, as Lambda's poller delivers it."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {k: str(v) for k, v in m.get("Attributes", {}).items()}
                or {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }
