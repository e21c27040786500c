"""The `target` of a job in the API: the string forms of `takt.models.targets`, and object forms.

An object form (`{"type": "handler", "name": "send_report"}`) is turned into its string form
before anything else sees it, so a job stores, returns and hashes (for idempotency) the same
target whichever form the caller used.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, WithJsonSchema

from takt.models.targets import (
    HANDLER_PREFIX,
    MAX_HEADERS,
    EventBusSpec,
    HandlerSpec,
    HttpSpec,
    LambdaSpec,
    SnsSpec,
    SqsSpec,
    StateMachineSpec,
    TargetSpec,
    parse_target,
)


class _TargetObject(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SigV4Auth(_TargetObject):
    """Sign each request with the worker's AWS role (SigV4), for IAM-protected API Gateway
    routes and Lambda function URLs. Both fields are derived from an `execute-api` or
    `lambda-url` host when left out, and stored."""

    service: str | None = Field(default=None, description="signing name: execute-api, lambda")
    region: str | None = Field(default=None, description="the target's region")


class OidcAuth(_TargetObject):
    """Send a token takt signs (RS256), which the receiver verifies against takt's JWKS."""

    audience: str | None = Field(
        default=None, description="the token's `aud` claim; the target's URL when left out"
    )


class HttpAuth(_TargetObject):
    """How an HTTP target's requests are authorized: at most one of `bearer_secret`, `sigv4`
    and `oidc` (each sets `Authorization`), and headers from a secret.

    Secrets are named, never given: each name starts with the deployment's secret prefix and the
    caller's tenant (`takt/<tenant>/...` by default); the worker reads the value when it calls.
    """

    bearer_secret: str | None = Field(
        default=None, description="secret holding a token, sent as `Authorization: Bearer ...`"
    )
    headers_secret: str | None = Field(
        default=None,
        description="secret holding a JSON object of header names to values, sent as headers",
    )
    sigv4: SigV4Auth | None = None
    oidc: OidcAuth | None = None


class HttpTargetObject(_TargetObject):
    """Send the payload as JSON to an http(s) URL (POST unless `method` says otherwise)."""

    type: Literal["http"]
    url: str
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = Field(
        default="POST", description="GET and DELETE send no body"
    )
    headers: dict[str, str] | None = Field(
        default=None,
        max_length=MAX_HEADERS,
        description="plain headers sent with every request (not hop-by-hop, takt's own or "
        "credentials: name a secret for those); no line breaks",
    )
    auth: HttpAuth | None = None
    signing_secret: str | None = Field(
        default=None,
        description="secret holding this job's Standard Webhooks key (`whsec_...`), used "
        "instead of the deployment's",
    )

    def text(self) -> str:
        """The stored form, checked by `parse_target` as the worker will read it (so headers,
        SigV4's derived service and region, and the OIDC audience get one set of rules)."""
        data = self.model_dump(exclude_none=True)
        if self.method == "POST":
            data.pop("method")
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


class HandlerTargetObject(_TargetObject):
    """Run a handler registered in a takt worker (`takt.handlers`)."""

    type: Literal["handler"]
    name: str

    def text(self) -> str:
        return HANDLER_PREFIX + self.name


class LambdaTargetObject(_TargetObject):
    """Invoke a Lambda function with the execution's envelope as its event: synchronously
    (`RequestResponse`, within the job's timeout; a function error is a failed attempt) or
    asynchronously (`Event`: Lambda's acceptance is success)."""

    type: Literal["lambda"]
    function: str = Field(description="the function's ARN, with a qualifier if wanted")
    invocation: Literal["RequestResponse", "Event"] = "RequestResponse"

    def text(self) -> str:
        spec = parse_target(self.function)
        if not isinstance(spec, LambdaSpec):
            raise ValueError("function is a Lambda function ARN")  # noqa: TRY004 - a bad value
        return LambdaSpec(spec.arn, spec.region, self.invocation).text()


class StepFunctionsTargetObject(_TargetObject):
    """Start an execution of a Step Functions state machine, named from the execution id and
    attempt (a retried start is the same execution), with the execution's envelope as input."""

    type: Literal["stepfunctions"]
    state_machine: str = Field(description="the state machine's ARN")

    def text(self) -> str:
        return self.state_machine


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
    | EventBusTargetObject
    | LambdaTargetObject
    | StepFunctionsTargetObject,
    Field(discriminator="type"),
]
_OBJECTS = TypeAdapter(TargetObject)
_KIND: dict[str, type[TargetSpec]] = {
    "http": HttpSpec,
    "handler": HandlerSpec,
    "sqs": SqsSpec,
    "sns": SnsSpec,
    "eventbridge": EventBusSpec,
    "lambda": LambdaSpec,
    "stepfunctions": StateMachineSpec,
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


# How every string target the API accepts begins (`parse_target`: a handler, an ARN, an object in
# JSON, or an http(s) URL, whose scheme `urlsplit` reads in any case); the rest of each form is
# checked by its parser. A string that begins otherwise ("", "0") is outside the schema too.
TARGET_PATTERN = r"^(?:handler:|arn:|\{|[Hh][Tt][Tt][Pp][Ss]?://)"
TARGET_SCHEMA: dict[str, Any] = {
    "description": "What each run calls: an http(s) URL, `handler:NAME`, an SQS queue URL or "
    "ARN, an SNS topic ARN, an EventBridge bus ARN, a Lambda function ARN or a Step Functions "
    'state machine ARN; or the same as an object (`{"type": "handler", "name": "send_report"}`), '
    "which is stored as its string form. An HTTP target with more than a POST of the payload "
    "(method, headers, secrets, SigV4, OIDC) and an asynchronous Lambda target are stored as "
    "their object in compact JSON (docs/WORKERS.md).",
    "anyOf": [
        {"type": "string", "format": "takt-target", "pattern": TARGET_PATTERN},
        *(
            _inlined(model.model_json_schema())
            for model in (
                HttpTargetObject,
                HandlerTargetObject,
                SqsTargetObject,
                SnsTargetObject,
                EventBusTargetObject,
                LambdaTargetObject,
                StepFunctionsTargetObject,
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
    spec = parse_target(text)
    if type(spec) is not _KIND[target.type]:
        raise ValueError(f"not a {target.type} target: {text!r}")
    # The canonical stored form: a plain POST is its bare URL, SigV4's service and region are
    # written out, and so on.
    return spec.text() if isinstance(spec, HttpSpec | LambdaSpec) else text


# Long enough for any queue URL, ARN or webhook URL; a target is stored in every job item.
MAX_TARGET_CHARS = 4096


def check_target(value: str) -> str:
    """Accept a string target only if a worker can call it (ValueError names the forms); an
    object in a string is stored in its canonical form, as an object-form target is.

    An URL is parsed strictly: whitespace or a control character anywhere in it (which
    `urlsplit` would strip or keep, and an HTTP client would send on as a header break) and a
    port that is not a number of 0-65535 are refused here rather than found by the worker.
    """
    if len(value) > MAX_TARGET_CHARS:
        raise ValueError(f"a target has at most {MAX_TARGET_CHARS} characters")
    spec = parse_target(value)
    # An object in a string (JSON) may hold spaces in its header values: the URL may not.
    text = spec.url if isinstance(spec, HttpSpec) else ("" if value.startswith("{") else value)
    if any(char.isspace() or unicodedata.category(char) in ("Cc", "Cf") for char in text):
        raise ValueError("a target URL may not hold spaces or control characters")
    if isinstance(spec, HttpSpec):
        try:
            urlsplit(spec.url).port  # noqa: B018 - reading it is the check
        except ValueError:
            raise ValueError("the target URL's port is not a number of 0-65535") from None
    return spec.text() if isinstance(spec, HttpSpec | LambdaSpec) else value
