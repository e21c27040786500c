"""The `target` of a job in the API: its schema in the OpenAPI document, and the string it is
stored as, whichever form the caller used.

An object form (`{"type": "handler", "name": "send_report"}`) is turned into its string form
before anything else sees it, so a job stores, returns and hashes (for idempotency) the same
target whichever form the caller used. Both forms are checked by the one validator of targets,
the union in `takt.models.targets`, which the store, the worker and the importers also use.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import WithJsonSchema

from takt.models.targets import TARGET_OBJECTS, target_object


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


# How every string target the API accepts begins (`object_form`: a handler, an ARN, an object in
# JSON, or an http(s) URL, whose scheme `urlsplit` reads in any case); the rest of each form is
# checked by the union. A string that begins otherwise ("", "0") is outside the schema too.
TARGET_PATTERN = r"^(?:handler:|arn:|\{|[Hh][Tt][Tt][Pp][Ss]?://)"
TARGET_SCHEMA: dict[str, Any] = {
    "description": "What each run calls: an http(s) URL, `handler:NAME`, an SQS queue URL or "
    "ARN, an SNS topic ARN, an EventBridge bus ARN, a Lambda function ARN or a Step Functions "
    "state machine ARN, or a container run on Fargate (object form only); or the same as an "
    'object (`{"type": "handler", "name": "send_report"}`), '
    "which is stored as its string form. An HTTP target with more than a POST of the payload "
    "(method, headers, secrets, SigV4, OIDC), an asynchronous Lambda target and a container "
    "target are stored as their object in compact JSON (docs/WORKERS.md).",
    "anyOf": [
        {"type": "string", "format": "takt-target", "pattern": TARGET_PATTERN},
        *(_inlined(model.model_json_schema()) for model in TARGET_OBJECTS),
    ],
}
TargetField = Annotated[str, WithJsonSchema(TARGET_SCHEMA)]


def target_text(value: Any) -> Any:
    """The string form of an object-form target; anything else is left to the string checks."""
    if not isinstance(value, dict):
        return value
    try:
        return target_object(value).text()
    except ValueError as exc:
        raise ValueError(f"target object: {exc}") from None


def check_target(value: str) -> str:
    """Accept a string target only if a worker can call it (ValueError names the forms), in its
    canonical stored form: an object in a string is stored as an object-form target is."""
    return target_object(value).text()
