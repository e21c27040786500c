"""The `target` of a job in the API: the string forms of `takt.targets.spec`, and object forms.

An object form (`{"type": "handler", "name": "send_report"}`) is turned into its string form
before anything else sees it, so a job stores, returns and hashes (for idempotency) the same
target whichever form the caller used.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, WithJsonSchema

from takt.targets.spec import (
    HANDLER_PREFIX,
    EventBusSpec,
    HandlerSpec,
    HttpSpec,
    SnsSpec,
    SqsSpec,
    TargetSpec,
    parse_target,
)


class _TargetObject(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HttpAuth(_TargetObject):
    """Credentials an HTTP target sends, as names of secrets in Secrets Manager (never values).

    Each name starts with the deployment's secret prefix and the caller's tenant
    (`takt/<tenant>/...` by default); the worker reads the value when it calls.
    """

    bearer_secret: str | None = Field(
        default=None, description="secret holding a token, sent as `Authorization: Bearer ...`"
    )
    headers_secret: str | None = Field(
        default=None,
        description="secret holding a JSON object of header names to values, sent as headers",
    )


class HttpTargetObject(_TargetObject):
    """POST the payload as JSON to an http(s) URL."""

    type: Literal["http"]
    url: str
    auth: HttpAuth | None = None
    signing_secret: str | None = Field(
        default=None,
        description="secret holding this job's Standard Webhooks key (`whsec_...`), used "
        "instead of the deployment's",
    )

    def text(self) -> str:
        auth = self.auth or HttpAuth()
        return HttpSpec(
            self.url, auth.bearer_secret, auth.headers_secret, self.signing_secret
        ).text()


class HandlerTargetObject(_TargetObject):
    """Run a handler registered in a takt worker (`takt.handlers`)."""

    type: Literal["handler"]
    name: str

    def text(self) -> str:
        return HANDLER_PREFIX + self.name


class SqsTargetObject(_TargetObject):
    """Send the payload to an SQS queue, named by URL or ARN."""

    type: Literal["sqs"]
    queue: str

    def text(self) -> str:
        return self.queue


class SnsTargetObject(_TargetObject):
    """Publish the payload to an SNS topic, named by ARN."""

    type: Literal["sns"]
    topic: str

    def text(self) -> str:
        return self.topic


class EventBusTargetObject(_TargetObject):
    """Put the payload as an event on an EventBridge bus, named by ARN."""

    type: Literal["eventbridge"]
    bus: str

    def text(self) -> str:
        return self.bus


TargetObject = Annotated[
    HttpTargetObject
    | HandlerTargetObject
    | SqsTargetObject
    | SnsTargetObject
    | EventBusTargetObject,
    Field(discriminator="type"),
]
_OBJECTS = TypeAdapter(TargetObject)
_KIND: dict[str, type[TargetSpec]] = {
    "http": HttpSpec,
    "handler": HandlerSpec,
    "sqs": SqsSpec,
    "sns": SnsSpec,
    "eventbridge": EventBusSpec,
}


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A model's JSON schema with its `$defs` written in place: it is embedded in the OpenAPI
    document, where a `#/$defs/...` reference would point at nothing."""
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, list):
            return [walk(value) for value in node]
        return node

    inlined: dict[str, Any] = walk(schema)
    return inlined


TARGET_SCHEMA: dict[str, Any] = {
    "description": "What each run calls: an http(s) URL, `handler:NAME`, an SQS queue URL or "
    "ARN, an SNS topic ARN or an EventBridge bus ARN; or the same as an object "
    '(`{"type": "handler", "name": "send_report"}`), which is stored as its string form. An '
    "HTTP target naming secrets is stored as its object in compact JSON.",
    "anyOf": [
        {"type": "string"},
        *(
            _inlined(model.model_json_schema())
            for model in (
                HttpTargetObject,
                HandlerTargetObject,
                SqsTargetObject,
                SnsTargetObject,
                EventBusTargetObject,
            )
        ),
    ],
}
TargetField = Annotated[str, WithJsonSchema(TARGET_SCHEMA)]


def target_text(value: Any) -> Any:
    """The string form of an object-form target; anything else is left to the string checks."""
    if not isinstance(value, dict):
        return value
    try:
        target = _OBJECTS.validate_python(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "".join(f"{p}: " for p in first["loc"][-1:])
        raise ValueError(f"target object: {where}{first['msg']}") from None
    text = target.text()
    if type(parse_target(text)) is not _KIND[target.type]:
        raise ValueError(f"not a {target.type} target: {text!r}")
    return text


def check_target(value: str) -> str:
    """Accept a string target only if a worker can call it (ValueError names the forms)."""
    parse_target(value)
    return value
