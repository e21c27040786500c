"""Calling the api Lambda handler as API Gateway's HTTP API (payload 2.0) would, and reading
the store back, for the API tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.api.handler import handler
from takt.api.ratelimit import REQUEST_BUCKET
from takt.resources import TABLES
from takt.wiring import Services
from takt_cli.local.events import LocalContext, LocalIdentity, http_api_event

TENANT = "tenant-a"
OTHER_TENANT = "tenant-b"
PROBLEM_JSON = "application/problem+json"


@dataclass(frozen=True)
class ApiResponse:
    status: int
    headers: dict[str, str]
    text: str

    @property
    def json(self) -> Any:
        return json.loads(self.text)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


class Api:
    """Calls the api handler as API Gateway would, as a JWT caller of one tenant and role."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        tenant: str = TENANT,
        role: str = "write",
    ) -> ApiResponse:
        all_headers: dict[str, str] = {}
        data = b""
        if raw is not None:
            data = raw
            all_headers["content-type"] = "application/json"
        elif body is not None:
            data = json.dumps(body).encode()
            all_headers["content-type"] = "application/json"
        all_headers.update({k.lower(): v for k, v in (headers or {}).items()})
        event = http_api_event(method, path, all_headers, data, LocalIdentity(tenant, role))
        result = handler(event, cast(LambdaContext, LocalContext(function_name="takt-api")))
        return ApiResponse(
            status=int(result["statusCode"]),
            headers={k.lower(): str(v) for k, v in (result.get("headers") or {}).items()},
            text=result.get("body") or "",
        )

    def create(self, body: dict[str, Any], **kwargs: Any) -> ApiResponse:
        return self.request("POST", "/v1/jobs", body, **kwargs)

    def created_job(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a job and return it, failing the test if the API refused."""
        resp = self.create(body)
        assert resp.status == 201, resp.text
        job: dict[str, Any] = resp.json
        return job


def store_snapshot(svc: Services) -> dict[str, Any]:
    """Every item of the tables but the request-rate buckets, and the message count of every
    lane (tests may scan)."""
    db = svc.clients.dynamodb
    snapshot: dict[str, Any] = {}
    settings = svc.settings
    for table in (getattr(settings, spec.setting) for spec in TABLES):
        items: list[str] = []
        kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        while True:
            page = db.scan(**kwargs)
            # default=repr: a workflow job's tasks are a binary attribute (bytes).
            items.extend(
                json.dumps(i, sort_keys=True, default=repr)
                for i in page.get("Items", [])
                # Every request takes a token, refused or not: the rate's bookkeeping, not data.
                if i.get("counter") != {"S": REQUEST_BUCKET}
            )
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        snapshot[table] = sorted(items)
    for lane, url in settings.lane_urls.items():
        attrs = svc.clients.sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
                "ApproximateNumberOfMessagesDelayed",
            ],
        )["Attributes"]
        snapshot[f"lane:{lane}"] = sum(int(v) for v in attrs.values())
    return snapshot


def lane_messages(svc: Services, lane: str = "default") -> list[dict[str, Any]]:
    """The bodies of the messages waiting in a lane (received, so they become invisible)."""
    resp = svc.clients.sqs.receive_message(
        QueueUrl=svc.settings.lane_url(lane), MaxNumberOfMessages=10, WaitTimeSeconds=0
    )
    return [json.loads(m["Body"]) for m in resp.get("Messages", [])]
