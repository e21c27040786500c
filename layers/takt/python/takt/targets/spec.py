"""What a job's `target` names, parsed from the one string the job and its executions store.

The API accepts the string forms below (and object forms that it turns into them), so the stored
target stays a plain string that every worker and every version of the history understands:

| kind | string form |
|---|---|
| HTTP endpoint | `https://svc.example/hook` (any http(s) URL that is not an SQS queue URL) |
| registered handler | `handler:send_report` |
| SQS queue | `arn:aws:sqs:us-east-1:123456789012:jobs`, or its URL `https://sqs.us-east-1.…/jobs` |
| SNS topic | `arn:aws:sns:us-east-1:123456789012:events` |
| EventBridge bus | `arn:aws:events:us-east-1:123456789012:event-bus/orders` |

An https URL on an SQS endpoint host names the queue, not an HTTP endpoint: POSTing a payload to
a queue URL without a SigV4 signature could never succeed, so nothing is lost by the rule.

An HTTP endpoint whose requests carry secrets names them, never their values, and is stored as a
compact JSON object with sorted keys, e.g.
`{"auth":{"bearer_secret":"takt/acme/token"},"type":"http","url":"https://svc.example/hook"}`:
the worker reads the values from Secrets Manager when it calls (docs/SECURITY.md).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

HANDLER_PREFIX = "handler:"
HANDLER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")

_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>sqs|sns|events):(?P<region>[a-z]{2}(-[a-z]+)+-\d+)"
    r":(?P<account>\d{12}):(?P<resource>.+)$"
)
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}(\.fifo)?$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,256}(\.fifo)?$")
_BUS_NAME = re.compile(r"^event-bus/(?P<name>[A-Za-z0-9/._-]{1,256})$")
# Secrets Manager's name alphabet; which names a tenant may use is checked where the tenant is
# known (the API and the worker).
SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
_AUTH_KEYS = frozenset({"bearer_secret", "headers_secret"})
_HTTP_KEYS = frozenset({"type", "url", "auth", "signing_secret"})
_SQS_HOSTS = (
    re.compile(r"^sqs\.(?P<region>[a-z]{2}(-[a-z]+)+-\d+)\.amazonaws\.com(\.cn)?$"),
    re.compile(r"^(?P<region>[a-z]{2}(-[a-z]+)+-\d+)\.queue\.amazonaws\.com(\.cn)?$"),
)


@dataclass(frozen=True)
class HttpSpec:
    """An http(s) endpoint, and the names of the secrets its requests carry.

    `bearer_secret` holds a token sent as `Authorization: Bearer …`; `headers_secret` a JSON object
    of header names to values; `signing_secret` a Standard Webhooks key (`whsec_…`) that signs
    each request instead of the deployment's.
    """

    url: str
    bearer_secret: str | None = None
    headers_secret: str | None = None
    signing_secret: str | None = None

    def secret_fields(self) -> dict[str, str]:
        """The secret names this target references, by their field in the API's object form."""
        fields = {
            "target.auth.bearer_secret": self.bearer_secret,
            "target.auth.headers_secret": self.headers_secret,
            "target.signing_secret": self.signing_secret,
        }
        return {field: name for field, name in fields.items() if name is not None}

    def text(self) -> str:
        """The stored string form: the bare URL, or the JSON object when secrets are named."""
        auth = {
            key: value
            for key, value in (
                ("bearer_secret", self.bearer_secret),
                ("headers_secret", self.headers_secret),
            )
            if value is not None
        }
        if not auth and self.signing_secret is None:
            return self.url
        data: dict[str, Any] = {"type": "http", "url": self.url}
        if auth:
            data["auth"] = auth
        if self.signing_secret is not None:
            data["signing_secret"] = self.signing_secret
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class HandlerSpec:
    name: str


@dataclass(frozen=True)
class SqsSpec:
    """A queue, by URL or ARN: `url` is known for the URL form, else resolved from the name."""

    region: str
    account: str
    name: str
    url: str | None = None

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")


@dataclass(frozen=True)
class SnsSpec:
    arn: str
    region: str

    @property
    def fifo(self) -> bool:
        return self.arn.endswith(".fifo")


@dataclass(frozen=True)
class EventBusSpec:
    arn: str
    region: str


TargetSpec = HttpSpec | HandlerSpec | SqsSpec | SnsSpec | EventBusSpec


def parse_target(text: str) -> TargetSpec:
    """The target a string names; ValueError saying which forms are accepted otherwise."""
    if text.startswith(HANDLER_PREFIX):
        name = text.removeprefix(HANDLER_PREFIX)
        if not HANDLER_NAME.match(name):
            raise ValueError(
                "a handler name starts with a letter or _ and has at most 128 letters, digits, "
                "_, . or -"
            )
        return HandlerSpec(name)
    if text.startswith("arn:"):
        return _parse_arn(text)
    if text.startswith("{"):
        return _parse_http_object(text)
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.hostname:
        for host in _SQS_HOSTS:
            match = host.match(parts.hostname)
            if match:
                return _queue_url(text, match.group("region"), parts.path)
        return HttpSpec(text)
    raise ValueError(
        "target must be an http(s) URL, handler:NAME, an SQS queue URL or ARN, an SNS topic ARN "
        "or an EventBridge bus ARN"
    )


def _parse_http_object(text: str) -> HttpSpec:
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("a target starting with { is an HTTP target object in JSON") from None
    if not isinstance(data, dict) or data.get("type") != "http":
        raise ValueError('a target object in a string is an HTTP target: {"type": "http", ...}')
    unknown = sorted(set(data) - _HTTP_KEYS)
    if unknown:
        raise ValueError(f"unknown HTTP target fields: {', '.join(unknown)}")
    auth = data.get("auth") or {}
    if not isinstance(auth, dict) or set(auth) - _AUTH_KEYS:
        raise ValueError("auth takes bearer_secret and headers_secret (secret names)")
    url = str(data.get("url") or "")
    if url.startswith("{") or not isinstance(parse_target(url), HttpSpec):
        raise ValueError("an HTTP target's url must be an http(s) URL")
    names = {
        "bearer_secret": auth.get("bearer_secret"),
        "headers_secret": auth.get("headers_secret"),
        "signing_secret": data.get("signing_secret"),
    }
    for key, name in names.items():
        if name is not None and not (isinstance(name, str) and SECRET_NAME.match(name)):
            raise ValueError(
                f"{key} is a secret name: 1 to 512 letters, digits and /_+=.@- characters"
            )
    return HttpSpec(url=url, **names)


def handler_name(text: str) -> str | None:
    """The handler a target names, or None for any other kind (cheap: the claimer's hot path)."""
    return text.removeprefix(HANDLER_PREFIX) if text.startswith(HANDLER_PREFIX) else None


def target_host(text: str) -> str | None:
    """The host an HTTP target calls (lower case), or None for any other kind; what a host's
    rate limit is keyed by. Cheap enough for the dispatch path: no full parse."""
    if text.startswith("{"):
        try:
            text = _parse_http_object(text).url
        except ValueError:
            return None
    if not text.startswith(("http://", "https://")):
        return None
    host = urlsplit(text).hostname
    return host.lower() if host else None


def _parse_arn(text: str) -> TargetSpec:
    match = _ARN.match(text)
    if not match:
        raise ValueError("not an SQS, SNS or EventBridge ARN")
    service, region, resource = match.group("service", "region", "resource")
    if service == "sqs":
        if not _QUEUE_NAME.match(resource):
            raise ValueError(f"not an SQS queue name: {resource!r}")
        return SqsSpec(region=region, account=match.group("account"), name=resource)
    if service == "sns":
        if not _TOPIC_NAME.match(resource):
            raise ValueError(f"not an SNS topic name: {resource!r}")
        return SnsSpec(arn=text, region=region)
    if not _BUS_NAME.match(resource):
        raise ValueError("an EventBridge target is an event bus ARN (…:event-bus/NAME)")
    return EventBusSpec(arn=text, region=region)


def _queue_url(text: str, region: str, path: str) -> SqsSpec:
    account, _, name = path.strip("/").partition("/")
    if not (account.isdigit() and len(account) == 12 and _QUEUE_NAME.match(name)):
        raise ValueError("an SQS queue URL ends in /ACCOUNT/QUEUE_NAME")
    return SqsSpec(region=region, account=account, name=name, url=text)
