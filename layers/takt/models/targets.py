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
| Lambda function (synchronous) | `arn:aws:lambda:us-east-1:123456789012:function:report[:QUAL]` |
| Step Functions state machine | `arn:aws:states:us-east-1:123456789012:stateMachine:orders` |

An https URL on an SQS endpoint host names the queue, not an HTTP endpoint: POSTing a payload to
a queue URL without a SigV4 signature could never succeed, so nothing is lost by the rule.

An HTTP endpoint called with more than a POST of the payload (another method, headers, secrets,
a SigV4 signature, an OIDC token) is stored as a compact JSON object with sorted keys, e.g.
`{"auth":{"bearer_secret":"takt/acme/token"},"method":"PUT","type":"http","url":"https://…"}`;
it names its secrets, never their values: the worker reads them from Secrets Manager when it calls
(docs/SECURITY.md). An asynchronous Lambda call is stored the same way:
`{"function":"arn:aws:lambda:…","invocation":"Event","type":"lambda"}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

HANDLER_PREFIX = "handler:"
HANDLER_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}$")

_REGION = r"[a-z]{2}(-[a-z]+)+-\d+"
_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>sqs|sns|events|lambda|states)"
    rf":(?P<region>{_REGION}):(?P<account>\d{{12}}):(?P<resource>.+)$"
)
_FUNCTION = re.compile(
    r"^function:(?P<name>[A-Za-z0-9_-]{1,64})(:(?P<qualifier>\$LATEST|[A-Za-z0-9_-]{1,128}))?$"
)
_STATE_MACHINE = re.compile(r"^stateMachine:[A-Za-z0-9_-]{1,80}$")
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}(\.fifo)?$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9_-]{1,256}(\.fifo)?$")
_BUS_NAME = re.compile(r"^event-bus/(?P<name>[A-Za-z0-9/._-]{1,256})$")
# Secrets Manager's name alphabet; which names a tenant may use is checked where the tenant is
# known (the API and the worker).
SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
_AUTH_KEYS = frozenset({"bearer_secret", "headers_secret", "sigv4", "oidc"})
_HTTP_KEYS = frozenset({"type", "url", "method", "headers", "auth", "signing_secret"})
_LAMBDA_KEYS = frozenset({"type", "function", "invocation"})
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# The methods whose requests carry the payload as their body; GET and DELETE send none.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
INVOCATIONS = ("RequestResponse", "Event")
MAX_HEADERS = 20
MAX_HEADER_VALUE = 1024
MAX_HEADERS_BYTES = 8192
MAX_AUDIENCE = 512
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Hop-by-hop headers (RFC 9110 7.6.1, and the proxy ones) concern one connection, which the worker
# owns; the framing and identity headers are takt's own. Neither a job nor a secret may set them.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
RESERVED_HEADERS = frozenset({"host", "content-length", "content-type", "expect"}) | HOP_BY_HOP
RESERVED_PREFIXES = ("takt-", "webhook-", "idempotency-key")
# What SigV4 and takt's credentials set; a job's plain headers may not (a credential in a plain
# header would be stored and shown in clear: a secret is the place for it).
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie"})
CREDENTIAL_PREFIXES = ("x-amz-",)
_SIGV4_HOSTS = (
    (
        re.compile(rf"^[a-z0-9]+\.execute-api\.(?P<region>{_REGION})\.amazonaws\.com$"),
        "execute-api",
    ),
    (re.compile(rf"^[a-z0-9]+\.lambda-url\.(?P<region>{_REGION})\.on\.aws$"), "lambda"),
)
# The only services a SigV4 target may sign for. The worker's role also holds takt's own table
# and queue grants: a signature for `dynamodb` or `sqs`, on a request whose body a tenant wrote,
# would let that tenant act as the worker. `execute-api` and `lambda` signatures open only what
# the deployment listed in `sigv4Targets` and `lambdaTargets`.
SIGV4_SERVICES = ("execute-api", "lambda")
_SQS_HOSTS = (
    re.compile(r"^sqs\.(?P<region>[a-z]{2}(-[a-z]+)+-\d+)\.amazonaws\.com(\.cn)?$"),
    re.compile(r"^(?P<region>[a-z]{2}(-[a-z]+)+-\d+)\.queue\.amazonaws\.com(\.cn)?$"),
)


@dataclass(frozen=True)
class SigV4:
    """Sign each request with the worker's AWS credentials, for `service` in `region`."""

    service: str
    region: str


@dataclass(frozen=True)
class HttpSpec:
    """An http(s) endpoint, how to call it, and the names of the secrets its requests carry.

    `method` is one of `METHODS`; `headers` are plain (name, value) pairs sent with every request.
    At most one of these sets `Authorization`: `bearer_secret` (a token sent as
    `Authorization: Bearer …`), `sigv4` (a signature made with the worker's role) or
    `oidc_audience` (a token takt signs, docs/SECURITY.md). `headers_secret` is a JSON object of
    header names to values; `signing_secret` a Standard Webhooks key (`whsec_…`) that signs each
    request instead of the deployment's.
    """

    url: str
    bearer_secret: str | None = None
    headers_secret: str | None = None
    signing_secret: str | None = None
    method: str = "POST"
    headers: tuple[tuple[str, str], ...] = ()
    sigv4: SigV4 | None = None
    oidc_audience: str | None = None

    def secret_fields(self) -> dict[str, str]:
        """The secret names this target references, by their field in the API's object form."""
        fields = {
            "target.auth.bearer_secret": self.bearer_secret,
            "target.auth.headers_secret": self.headers_secret,
            "target.signing_secret": self.signing_secret,
        }
        return {field: name for field, name in fields.items() if name is not None}

    def text(self) -> str:
        """The stored string form: the bare URL for a plain POST, else the JSON object."""
        auth: dict[str, Any] = {
            key: value
            for key, value in (
                ("bearer_secret", self.bearer_secret),
                ("headers_secret", self.headers_secret),
            )
            if value is not None
        }
        if self.sigv4 is not None:
            auth["sigv4"] = {"service": self.sigv4.service, "region": self.sigv4.region}
        if self.oidc_audience is not None:
            auth["oidc"] = {"audience": self.oidc_audience}
        data: dict[str, Any] = {"type": "http", "url": self.url}
        if auth:
            data["auth"] = auth
        if self.signing_secret is not None:
            data["signing_secret"] = self.signing_secret
        if self.method != "POST":
            data["method"] = self.method
        if self.headers:
            data["headers"] = dict(self.headers)
        if len(data) == 2:
            return self.url
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


@dataclass(frozen=True)
class LambdaSpec:
    """A Lambda function (its ARN, with a qualifier if one was given), called synchronously
    (`RequestResponse`: the function's answer is the outcome) or asynchronously (`Event`: Lambda's
    acceptance is)."""

    arn: str
    region: str
    invocation: str = "RequestResponse"

    def text(self) -> str:
        if self.invocation == "RequestResponse":
            return self.arn
        data = {"type": "lambda", "function": self.arn, "invocation": self.invocation}
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class StateMachineSpec:
    arn: str
    region: str


TargetSpec = (
    HttpSpec | HandlerSpec | SqsSpec | SnsSpec | EventBusSpec | LambdaSpec | StateMachineSpec
)
# The kinds called through AWS's APIs with the deployment's clients, in its region.
AwsSpec = SqsSpec | SnsSpec | EventBusSpec | LambdaSpec | StateMachineSpec


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
        return _parse_object(text)
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.hostname:
        for host in _SQS_HOSTS:
            match = host.match(parts.hostname)
            if match:
                return _queue_url(text, match.group("region"), parts.path)
        return HttpSpec(text)
    raise ValueError(
        "target must be an http(s) URL, handler:NAME, an SQS queue URL or ARN, an SNS topic ARN, "
        "an EventBridge bus ARN, a Lambda function ARN or a Step Functions state machine ARN"
    )


def _parse_object(text: str) -> HttpSpec | LambdaSpec:
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("a target starting with { is a target object in JSON") from None
    if isinstance(data, dict) and data.get("type") == "lambda":
        return _parse_lambda_object(data)
    if not isinstance(data, dict) or data.get("type") != "http":
        raise ValueError(
            'a target object in a string is an HTTP or Lambda target: {"type": "http", ...}'
        )
    return _parse_http_object(data)


def _parse_lambda_object(data: dict[str, Any]) -> LambdaSpec:
    unknown = sorted(set(data) - _LAMBDA_KEYS)
    if unknown:
        raise ValueError(f"unknown Lambda target fields: {', '.join(unknown)}")
    invocation = data.get("invocation", "RequestResponse")
    if invocation not in INVOCATIONS:
        raise ValueError(f"invocation is one of {', '.join(INVOCATIONS)}")
    function = data.get("function")
    spec = _parse_arn(function) if isinstance(function, str) else None
    if not isinstance(spec, LambdaSpec):
        raise ValueError("a Lambda target's function is a Lambda function ARN")  # noqa: TRY004 - a bad target is a bad value
    return LambdaSpec(spec.arn, spec.region, invocation)


def _parse_http_object(data: dict[str, Any]) -> HttpSpec:
    unknown = sorted(set(data) - _HTTP_KEYS)
    if unknown:
        raise ValueError(f"unknown HTTP target fields: {', '.join(unknown)}")
    auth = data.get("auth") or {}
    if not isinstance(auth, dict) or set(auth) - _AUTH_KEYS:
        raise ValueError(
            "auth takes bearer_secret and headers_secret (secret names), sigv4 and oidc"
        )
    url = data.get("url")
    if (
        not isinstance(url, str)
        or url.startswith("{")
        or not isinstance(parse_target(url), HttpSpec)
    ):
        raise ValueError("an HTTP target's url must be an http(s) URL")
    names = _secret_names(
        {
            "bearer_secret": auth.get("bearer_secret"),
            "headers_secret": auth.get("headers_secret"),
            "signing_secret": data.get("signing_secret"),
        }
    )
    method = data.get("method", "POST")
    if method not in METHODS:
        raise ValueError(f"method is one of {', '.join(METHODS)}")
    sigv4 = _sigv4(auth["sigv4"], url) if "sigv4" in auth else None
    oidc = _oidc_audience(auth["oidc"], url) if "oidc" in auth else None
    if sum(x is not None for x in (names["bearer_secret"], sigv4, oidc)) > 1:
        raise ValueError(
            "auth takes at most one of bearer_secret, sigv4 and oidc: each sets Authorization"
        )
    headers = _plain_headers(data.get("headers") or {})
    return HttpSpec(
        url=url, method=method, headers=headers, sigv4=sigv4, oidc_audience=oidc, **names
    )


def _secret_names(names: dict[str, Any]) -> dict[str, Any]:
    """`names` (field -> secret name or None), each name checked for a secret name's form."""
    for key, name in names.items():
        if name is not None and not (isinstance(name, str) and SECRET_NAME.match(name)):
            raise ValueError(
                f"{key} is a secret name: 1 to 512 letters, digits and /_+=.@- characters"
            )
    return names


def _sigv4(value: Any, url: str) -> SigV4:
    """SigV4's service and region: as given, else as the host names them (an API Gateway
    `execute-api` host or a Lambda function URL); stored explicitly either way."""
    if value is True:
        value = {}
    if not isinstance(value, dict) or set(value) - {"service", "region"}:
        raise ValueError("sigv4 is an object with an optional service and region")
    derived: tuple[str | None, str | None] = (None, None)
    host = (urlsplit(url).hostname or "").lower()
    for pattern, name in _SIGV4_HOSTS:
        match = pattern.match(host)
        if match:
            derived = (name, match.group("region"))
    service: object = value.get("service", derived[0])
    region: object = value.get("region", derived[1])
    if service is None or region is None:
        raise ValueError(
            "sigv4 needs a service and a region unless the host names them (an execute-api "
            "or lambda-url host)"
        )
    if service not in SIGV4_SERVICES:
        raise ValueError(
            f"sigv4.service is one of {', '.join(SIGV4_SERVICES)} (API Gateway, function URLs)"
        )
    assert isinstance(service, str)
    if not (isinstance(region, str) and re.match(rf"^{_REGION}$", region)):
        raise ValueError("sigv4.region is an AWS region such as us-east-1")
    if not url.startswith("https://"):
        raise ValueError("a SigV4-signed target is https: its signature must not cross in clear")
    return SigV4(service, region)


def _oidc_audience(value: Any, url: str) -> str:
    """The audience an OIDC token names: as given, else the target's URL (as Cloud Scheduler
    does)."""
    if value is True:
        value = {}
    if not isinstance(value, dict) or set(value) - {"audience"}:
        raise ValueError("oidc is an object with an optional audience")
    audience = value.get("audience", url)
    if not isinstance(audience, str) or not 0 < len(audience) <= MAX_AUDIENCE:
        raise ValueError(f"oidc.audience is a string of 1 to {MAX_AUDIENCE} characters")
    if not audience.isprintable():
        raise ValueError("oidc.audience has a control character")
    return audience


def header_problem(name: str, value: str) -> str | None:
    """Why a header may not be sent as given (a job's or a secret's), or None when it may."""
    lower = name.lower()
    if not HEADER_NAME.match(name):
        return f"{name!r} is not a header name (1 to 128 token characters)"
    if lower in RESERVED_HEADERS or lower.startswith(RESERVED_PREFIXES):
        return f"{name!r} is a header takt or the connection sets itself"
    if len(value) > MAX_HEADER_VALUE:
        return f"header {name!r} is longer than {MAX_HEADER_VALUE} characters"
    if any(c in value for c in "\r\n\0") or not all(c == "\t" or " " <= c <= "~" for c in value):
        return f"header {name!r} has a line break or a control or non-ASCII character"
    return None


def _plain_headers(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError("headers is an object of header names to string values")
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    if sum(len(k) + len(v) for k, v in value.items()) > MAX_HEADERS_BYTES:
        raise ValueError(f"headers take at most {MAX_HEADERS_BYTES} characters together")
    lowered = [k.lower() for k in value]
    if len(set(lowered)) != len(lowered):
        raise ValueError("a header is named twice (header names ignore case)")
    for name, text in value.items():
        problem = header_problem(name, text)
        if problem is None and (
            name.lower() in CREDENTIAL_HEADERS or name.lower().startswith(CREDENTIAL_PREFIXES)
        ):
            problem = (
                f"{name!r} carries credentials, which a plain header would store in clear: name "
                "a secret in auth.bearer_secret or auth.headers_secret, or use auth.sigv4"
            )
        if problem is not None:
            raise ValueError(problem)
    return tuple(sorted(value.items(), key=lambda item: item[0].lower()))


def handler_name(text: str) -> str | None:
    """The handler a target names, or None for any other kind (cheap: the claimer's hot path)."""
    return text.removeprefix(HANDLER_PREFIX) if text.startswith(HANDLER_PREFIX) else None


def target_host(text: str) -> str | None:
    """The host an HTTP target calls (lower case), or None for any other kind; what a host's
    rate limit is keyed by. Cheap enough for the dispatch path: no full parse."""
    if text.startswith("{"):
        try:
            spec = _parse_object(text)
        except ValueError:
            return None
        if not isinstance(spec, HttpSpec):
            return None
        text = spec.url
    if not text.startswith(("http://", "https://")):
        return None
    host = urlsplit(text).hostname
    return host.lower() if host else None


def _parse_arn(text: str) -> TargetSpec:
    match = _ARN.match(text)
    if not match:
        raise ValueError("not an SQS, SNS, EventBridge, Lambda or Step Functions ARN")
    service, region, resource = match.group("service", "region", "resource")
    if service == "sqs":
        if not _QUEUE_NAME.match(resource):
            raise ValueError(f"not an SQS queue name: {resource!r}")
        return SqsSpec(region=region, account=match.group("account"), name=resource)
    if service == "sns":
        if not _TOPIC_NAME.match(resource):
            raise ValueError(f"not an SNS topic name: {resource!r}")
        return SnsSpec(arn=text, region=region)
    if service == "lambda":
        if not _FUNCTION.match(resource):
            raise ValueError("a Lambda target is a function ARN (…:function:NAME[:QUALIFIER])")
        return LambdaSpec(arn=text, region=region)
    if service == "states":
        if not _STATE_MACHINE.match(resource):
            raise ValueError("a Step Functions target is a state machine ARN (…:stateMachine:NAME)")
        return StateMachineSpec(arn=text, region=region)
    if not _BUS_NAME.match(resource):
        raise ValueError("an EventBridge target is an event bus ARN (…:event-bus/NAME)")
    return EventBusSpec(arn=text, region=region)


def _queue_url(text: str, region: str, path: str) -> SqsSpec:
    account, _, name = path.strip("/").partition("/")
    if not (account.isdigit() and len(account) == 12 and _QUEUE_NAME.match(name)):
        raise ValueError("an SQS queue URL ends in /ACCOUNT/QUEUE_NAME")
    return SqsSpec(region=region, account=account, name=name, url=text)
