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
| container (ECS RunTask on Fargate) | `{"cpu":256,"image":"…","memory":512,"type":"container"}` |

An https URL on an SQS endpoint host names the queue, not an HTTP endpoint: POSTing a payload to
a queue URL without a SigV4 signature could never succeed, so nothing is lost by the rule.

An HTTP endpoint called with more than a POST of the payload (another method, headers, secrets,
a SigV4 signature, an OIDC token) is stored as a compact JSON object with sorted keys, e.g.
`{"auth":{"bearer_secret":"takt/acme/token"},"method":"PUT","type":"http","url":"https://…"}`;
it names its secrets, never their values: the worker reads them from Secrets Manager when it calls
(docs/SECURITY.md). An asynchronous Lambda call is stored the same way:
`{"function":"arn:aws:lambda:…","invocation":"Event","type":"lambda"}`, and a container target
always is (takt.targets.container runs it).

Targets are validated once, by one discriminated pydantic union (`TargetObject`, one model per
kind, each holding its kind's rules): a string form is first read as the object it stands for
(`object_form`, which only looks at how the string begins), so the API's object and string forms,
the store reading a record back (`StoredTarget`), the importers (through the API's models) and
the worker (`parse_target`) accept and refuse exactly the same targets
(tests/unit/targets/test_target_entry_points.py holds them to it).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

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
Method = Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
# The methods whose requests carry the payload as their body; GET and DELETE send none.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
Invocation = Literal["RequestResponse", "Event"]
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


@dataclass(frozen=True)
class ContainerSpec:
    """A container run as one ECS task on Fargate: its image, command (the image's own when
    empty), environment as sorted (name, value) pairs, and the task's CPU units and MiB."""

    image: str
    command: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    cpu: int = 256
    memory: int = 512

    def text(self) -> str:
        """The stored form: the object in compact JSON with sorted keys (empty fields left out)."""
        data: dict[str, Any] = {
            "type": "container",
            "image": self.image,
            "cpu": self.cpu,
            "memory": self.memory,
        }
        if self.command:
            data["command"] = list(self.command)
        if self.environment:
            data["environment"] = dict(self.environment)
        return json.dumps(data, sort_keys=True, separators=(",", ":"))


TargetSpec = (
    HttpSpec
    | HandlerSpec
    | SqsSpec
    | SnsSpec
    | EventBusSpec
    | LambdaSpec
    | StateMachineSpec
    | ContainerSpec
)
# The kinds called through AWS's APIs with the deployment's clients, in its region.
AwsSpec = SqsSpec | SnsSpec | EventBusSpec | LambdaSpec | StateMachineSpec


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


class _TargetObject(BaseModel):
    """A target object refuses a field it does not know: a misspelt one would otherwise be
    dropped, and the target stored without what the caller meant."""

    model_config = ConfigDict(extra="forbid")


def _secret_name(name: str) -> str:
    if not SECRET_NAME.match(name):
        raise ValueError("a secret name has 1 to 512 letters, digits and /_+=.@- characters")
    return name


# A secret is named, never given: which names a tenant may use is checked where the tenant is
# known (the API and the worker).
SecretName = Annotated[str, AfterValidator(_secret_name)]


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

    bearer_secret: SecretName | None = Field(
        default=None, description="secret holding a token, sent as `Authorization: Bearer ...`"
    )
    headers_secret: SecretName | None = Field(
        default=None,
        description="secret holding a JSON object of header names to values, sent as headers",
    )
    sigv4: SigV4Auth | None = None
    oidc: OidcAuth | None = None


def _strict_url(url: str) -> None:
    """Refuse what `urlsplit` would strip or keep and an HTTP client would send on as a header
    break (whitespace or a control character anywhere), and a port that is not a number of
    0-65535, rather than leave them for the worker to find."""
    if any(char.isspace() or unicodedata.category(char) in ("Cc", "Cf") for char in url):
        raise ValueError("a target URL may not hold spaces or control characters")
    try:
        urlsplit(url).port  # noqa: B018 - reading it is the check
    except ValueError:
        raise ValueError("the target URL's port is not a number of 0-65535") from None


def _queue_host(url: str) -> re.Match[str] | None:
    """The SQS endpoint an http(s) URL's host names (its region in `region`), if it does."""
    host = urlsplit(url).hostname or ""
    return next((match for pattern in _SQS_HOSTS if (match := pattern.match(host))), None)


def _plain_headers(value: dict[str, str]) -> dict[str, str]:
    """A job's plain headers, each one a header a job may set and none carrying credentials."""
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
    return value


def _sigv4(given: SigV4Auth, url: str) -> SigV4:
    """SigV4's service and region: as given, else as the host names them (an API Gateway
    `execute-api` host or a Lambda function URL); stored explicitly either way."""
    derived: tuple[str | None, str | None] = (None, None)
    host = (urlsplit(url).hostname or "").lower()
    for pattern, name in _SIGV4_HOSTS:
        match = pattern.match(host)
        if match:
            derived = (name, match.group("region"))
    service = given.service if given.service is not None else derived[0]
    region = given.region if given.region is not None else derived[1]
    if service is None or region is None:
        raise ValueError(
            "sigv4 needs a service and a region unless the host names them (an execute-api "
            "or lambda-url host)"
        )
    if service not in SIGV4_SERVICES:
        raise ValueError(
            f"sigv4.service is one of {', '.join(SIGV4_SERVICES)} (API Gateway, function URLs)"
        )
    if not re.match(rf"^{_REGION}$", region):
        raise ValueError("sigv4.region is an AWS region such as us-east-1")
    if not url.startswith("https://"):
        raise ValueError("a SigV4-signed target is https: its signature must not cross in clear")
    return SigV4(service, region)


def _oidc_audience(given: OidcAuth, url: str) -> str:
    """The audience an OIDC token names: as given, else the target's URL (as Cloud Scheduler
    does)."""
    audience = given.audience if given.audience is not None else url
    if not 0 < len(audience) <= MAX_AUDIENCE:
        raise ValueError(f"oidc.audience is a string of 1 to {MAX_AUDIENCE} characters")
    if not audience.isprintable():
        raise ValueError("oidc.audience has a control character")
    return audience


class HttpTargetObject(_TargetObject):
    """Send the payload as JSON to an http(s) URL (POST unless `method` says otherwise)."""

    type: Literal["http"]
    url: str
    method: Method = Field(default="POST", description="GET and DELETE send no body")
    headers: dict[str, str] | None = Field(
        default=None,
        max_length=MAX_HEADERS,
        description="plain headers sent with every request (not hop-by-hop, takt's own or "
        "credentials: name a secret for those); no line breaks",
    )
    auth: HttpAuth | None = None
    signing_secret: SecretName | None = Field(
        default=None,
        description="secret holding this job's Standard Webhooks key (`whsec_...`), used "
        "instead of the deployment's",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ValueError("an HTTP target's url must be an http(s) URL")
        if _queue_host(url):
            raise ValueError("an SQS queue URL names a queue: give it as an sqs target")
        _strict_url(url)
        return url

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        return None if headers is None else _plain_headers(headers)

    @model_validator(mode="after")
    def _one_authorization(self) -> HttpTargetObject:
        # Building the spec checks `auth` against the URL (SigV4's host and scheme, the OIDC
        # audience, at most one way of setting Authorization).
        self.spec()
        return self

    def spec(self) -> HttpSpec:
        """The endpoint and how to call it; ValueError for an `auth` that cannot be sent."""
        auth = self.auth or HttpAuth()
        sigv4 = None if auth.sigv4 is None else _sigv4(auth.sigv4, self.url)
        oidc = None if auth.oidc is None else _oidc_audience(auth.oidc, self.url)
        if sum(x is not None for x in (auth.bearer_secret, sigv4, oidc)) > 1:
            raise ValueError(
                "auth takes at most one of bearer_secret, sigv4 and oidc: each sets Authorization"
            )
        return HttpSpec(
            url=self.url,
            bearer_secret=auth.bearer_secret,
            headers_secret=auth.headers_secret,
            signing_secret=self.signing_secret,
            method=self.method,
            headers=tuple(sorted((self.headers or {}).items(), key=lambda item: item[0].lower())),
            sigv4=sigv4,
            oidc_audience=oidc,
        )

    def text(self) -> str:
        """The stored form: the bare URL for a plain POST, else the object in compact JSON
        (SigV4's derived service and region and the OIDC audience written out)."""
        return self.spec().text()


class HandlerTargetObject(_TargetObject):
    """Run a handler registered in a takt worker (`takt.handlers`)."""

    type: Literal["handler"]
    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not HANDLER_NAME.match(name):
            raise ValueError(
                "a handler name starts with a letter or _ and has at most 128 letters, digits, "
                "_, . or -"
            )
        return name

    def spec(self) -> HandlerSpec:
        return HandlerSpec(self.name)

    def text(self) -> str:
        return HANDLER_PREFIX + self.name


def _arn(value: str, service: str, kind: str) -> re.Match[str]:
    """The parts of an ARN of `service`; ValueError naming the `kind` it is not otherwise."""
    match = _ARN.match(value)
    if not match or match.group("service") != service:
        raise ValueError(f"not a {kind} target: {value!r}")
    return match


class SqsTargetObject(_TargetObject):
    """Send the payload to an SQS queue, named by URL or ARN."""

    type: Literal["sqs"]
    queue: str

    @field_validator("queue")
    @classmethod
    def _queue(cls, queue: str) -> str:
        cls.queue_spec(queue)
        return queue

    @staticmethod
    def queue_spec(queue: str) -> SqsSpec:
        """The queue a URL or an ARN names; ValueError saying what is wrong otherwise."""
        if not queue.startswith("arn:"):
            host = _queue_host(queue) if queue.startswith(("http://", "https://")) else None
            if host is None:
                raise ValueError(f"not a sqs target: {queue!r}")
            _strict_url(queue)
            account, _, name = urlsplit(queue).path.strip("/").partition("/")
            if not (account.isdigit() and len(account) == 12 and _QUEUE_NAME.match(name)):
                raise ValueError("an SQS queue URL ends in /ACCOUNT/QUEUE_NAME")
            return SqsSpec(region=host.group("region"), account=account, name=name, url=queue)
        match = _arn(queue, "sqs", "sqs")
        if not _QUEUE_NAME.match(match.group("resource")):
            raise ValueError(f"not an SQS queue name: {match.group('resource')!r}")
        return SqsSpec(
            region=match.group("region"),
            account=match.group("account"),
            name=match.group("resource"),
        )

    def spec(self) -> SqsSpec:
        return self.queue_spec(self.queue)

    def text(self) -> str:
        return self.queue


class SnsTargetObject(_TargetObject):
    """Publish the payload to an SNS topic, named by ARN."""

    type: Literal["sns"]
    topic: str

    @field_validator("topic")
    @classmethod
    def _topic(cls, topic: str) -> str:
        resource = _arn(topic, "sns", "sns").group("resource")
        if not _TOPIC_NAME.match(resource):
            raise ValueError(f"not an SNS topic name: {resource!r}")
        return topic

    def spec(self) -> SnsSpec:
        return SnsSpec(arn=self.topic, region=_arn(self.topic, "sns", "sns").group("region"))

    def text(self) -> str:
        return self.topic


class EventBusTargetObject(_TargetObject):
    """Put the payload as an event on an EventBridge bus, named by ARN."""

    type: Literal["eventbridge"]
    bus: str

    @field_validator("bus")
    @classmethod
    def _bus(cls, bus: str) -> str:
        if not _BUS_NAME.match(_arn(bus, "events", "eventbridge").group("resource")):
            raise ValueError("an EventBridge target is an event bus ARN (…:event-bus/NAME)")
        return bus

    def spec(self) -> EventBusSpec:
        region = _arn(self.bus, "events", "eventbridge").group("region")
        return EventBusSpec(arn=self.bus, region=region)

    def text(self) -> str:
        return self.bus


class LambdaTargetObject(_TargetObject):
    """Invoke a Lambda function with the execution's envelope as its event: synchronously
    (`RequestResponse`, within the job's timeout; a function error is a failed attempt) or
    asynchronously (`Event`: Lambda's acceptance is success)."""

    type: Literal["lambda"]
    function: str = Field(description="the function's ARN, with a qualifier if wanted")
    invocation: Invocation = "RequestResponse"

    @field_validator("function")
    @classmethod
    def _function(cls, function: str) -> str:
        match = _ARN.match(function)
        if not match or match.group("service") != "lambda":
            raise ValueError("function is a Lambda function ARN")
        if not _FUNCTION.match(match.group("resource")):
            raise ValueError("a Lambda target is a function ARN (…:function:NAME[:QUALIFIER])")
        return function

    def spec(self) -> LambdaSpec:
        region = _arn(self.function, "lambda", "lambda").group("region")
        return LambdaSpec(self.function, region, self.invocation)

    def text(self) -> str:
        """The function's ARN for a synchronous call, else the object in compact JSON."""
        return self.spec().text()


class StepFunctionsTargetObject(_TargetObject):
    """Start an execution of a Step Functions state machine, named from the execution id and
    attempt (a retried start is the same execution), with the execution's envelope as input."""

    type: Literal["stepfunctions"]
    state_machine: str = Field(description="the state machine's ARN")

    @field_validator("state_machine")
    @classmethod
    def _state_machine(cls, arn: str) -> str:
        if not _STATE_MACHINE.match(_arn(arn, "states", "stepfunctions").group("resource")):
            raise ValueError("a Step Functions target is a state machine ARN (…:stateMachine:NAME)")
        return arn

    def spec(self) -> StateMachineSpec:
        region = _arn(self.state_machine, "states", "stepfunctions").group("region")
        return StateMachineSpec(arn=self.state_machine, region=region)

    def text(self) -> str:
        return self.state_machine


# Fargate's task sizes: CPU units and the memory (MiB) each allows, as (lowest, highest, step).
FARGATE_MEMORY = {
    256: (512, 2048, 512),
    512: (1024, 4096, 1024),
    1024: (2048, 8192, 1024),
    2048: (4096, 16384, 1024),
    4096: (8192, 30720, 1024),
    8192: (16384, 61440, 4096),
    16384: (32768, 122880, 8192),
}
_IMAGE = re.compile(r"^[a-z0-9][A-Za-z0-9./:@_-]{0,254}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
# The variables takt sets in every task (the execution's identity and payload).
RESERVED_ENV_PREFIX = "TAKT_"
MAX_COMMAND_ARGS = 64
MAX_ENVIRONMENT = 64


def _fargate_memory(cpu: int, memory: int) -> None:
    """Refuse a CPU and memory pair Fargate cannot run, naming the memory that CPU allows."""
    if cpu not in FARGATE_MEMORY:
        raise ValueError(f"cpu is one of {', '.join(map(str, FARGATE_MEMORY))} (CPU units)")
    low, high, step = FARGATE_MEMORY[cpu]
    if not (low <= memory <= high and (memory - low) % step == 0):
        raise ValueError(
            f"with cpu {cpu}, memory is {low} to {high} MiB in steps of {step} (Fargate's sizes)"
        )


class ContainerTargetObject(_TargetObject):
    """Run a container as one ECS task on Fargate, in the cluster, subnets and security groups
    the deployment names; the container's exit code is the outcome (0 succeeds). The execution's
    identity and payload reach it as `TAKT_*` environment variables."""

    type: Literal["container"]
    image: str = Field(description="the image, e.g. `public.ecr.aws/docker/library/busybox:1.36`")
    command: list[Annotated[str, Field(max_length=1024)]] | None = Field(
        default=None, max_length=MAX_COMMAND_ARGS, description="the image's own when left out"
    )
    environment: dict[str, Annotated[str, Field(max_length=1024)]] | None = Field(
        default=None,
        max_length=MAX_ENVIRONMENT,
        description="variables set in the container; names starting TAKT_ are takt's own",
    )
    cpu: int = Field(default=256, description="CPU units: 256, 512, 1024, ... 16384")
    memory: int = Field(default=512, description="MiB, as Fargate allows for the cpu")

    @field_validator("image")
    @classmethod
    def _image(cls, image: str) -> str:
        if not _IMAGE.match(image):
            raise ValueError(
                "image is an image reference of at most 255 characters (registry/name:tag or "
                "@digest), no spaces"
            )
        return image

    @field_validator("environment")
    @classmethod
    def _environment(cls, environment: dict[str, str] | None) -> dict[str, str] | None:
        for name in environment or {}:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if name.upper().startswith(RESERVED_ENV_PREFIX):
                raise ValueError(f"{name!r}: names starting {RESERVED_ENV_PREFIX} are takt's own")
        return environment

    @model_validator(mode="after")
    def _sized(self) -> ContainerTargetObject:
        _fargate_memory(self.cpu, self.memory)
        if len(self.text()) > MAX_TARGET_CHARS:
            raise ValueError(
                f"a container target takes at most {MAX_TARGET_CHARS} characters stored "
                "(command and environment together)"
            )
        return self

    def spec(self) -> ContainerSpec:
        return ContainerSpec(
            image=self.image,
            command=tuple(self.command or ()),
            environment=tuple(sorted((self.environment or {}).items())),
            cpu=self.cpu,
            memory=self.memory,
        )

    def text(self) -> str:
        return self.spec().text()


TARGET_OBJECTS = (
    HttpTargetObject,
    HandlerTargetObject,
    SqsTargetObject,
    SnsTargetObject,
    EventBusTargetObject,
    LambdaTargetObject,
    StepFunctionsTargetObject,
    ContainerTargetObject,
)
AnyTargetObject = (
    HttpTargetObject
    | HandlerTargetObject
    | SqsTargetObject
    | SnsTargetObject
    | EventBusTargetObject
    | LambdaTargetObject
    | StepFunctionsTargetObject
    | ContainerTargetObject
)
TargetObject = Annotated[AnyTargetObject, Field(discriminator="type")]
# The one validator of targets: the API's object forms, every string form (through
# `object_form`), the store's read-back, the importers and the worker all go through it.
TARGETS: TypeAdapter[TargetObject] = TypeAdapter(TargetObject)
# The kinds an ARN names, by its service.
_ARN_KINDS = {
    "sqs": ("sqs", "queue"),
    "sns": ("sns", "topic"),
    "events": ("eventbridge", "bus"),
    "lambda": ("lambda", "function"),
    "states": ("stepfunctions", "state_machine"),
}
# Long enough for any queue URL, ARN or webhook URL; a target is stored in every job item.
MAX_TARGET_CHARS = 4096


def object_form(text: str) -> dict[str, Any]:
    """The object form of a string target, unchecked: which kind the string names is read from
    how it begins (the table above); what the kind allows is the union's to check."""
    if len(text) > MAX_TARGET_CHARS:
        raise ValueError(f"a target has at most {MAX_TARGET_CHARS} characters")
    if text.startswith(HANDLER_PREFIX):
        return {"type": "handler", "name": text.removeprefix(HANDLER_PREFIX)}
    if text.startswith("arn:"):
        match = _ARN.match(text)
        if not match:
            raise ValueError("not an SQS, SNS, EventBridge, Lambda or Step Functions ARN")
        kind, field = _ARN_KINDS[match.group("service")]
        return {"type": kind, field: text}
    if text.startswith("{"):
        return _stored_object(text)
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.hostname:
        return (
            {"type": "sqs", "queue": text} if _queue_host(text) else {"type": "http", "url": text}
        )
    raise ValueError(
        "target must be an http(s) URL, handler:NAME, an SQS queue URL or ARN, an SNS topic ARN, "
        "an EventBridge bus ARN, a Lambda function ARN or a Step Functions state machine ARN"
    )


def _stored_object(text: str) -> dict[str, Any]:
    """An object stored in JSON: only the kinds whose stored form is one (an HTTP target with
    more than a POST, an asynchronous Lambda target, a container)."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("a target starting with { is a target object in JSON") from None
    if not isinstance(data, dict) or data.get("type") not in ("http", "lambda", "container"):
        raise ValueError(
            "a target object in a string is an HTTP, Lambda or container target: "
            '{"type": "http", ...}'
        )
    return data


def problem(exc: ValidationError) -> str:
    """The first of the union's errors in one line: the field it is in (within the object form,
    the kind's tag left out) and what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"][1:])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def target_object(value: Any) -> AnyTargetObject:
    """The checked object form of a target given as an object or as its string form;
    ValueError naming what is wrong otherwise."""
    data = object_form(value) if isinstance(value, str) else value
    try:
        return TARGETS.validate_python(data)
    except ValidationError as exc:
        raise ValueError(problem(exc)) from None


def parse_target(text: str) -> TargetSpec:
    """The target a string names; ValueError saying which forms are accepted otherwise."""
    return target_object(text).spec()


def stored_target(value: str) -> str:
    """`value` if it is a target a worker can call, as a stored record's field is read back
    (a record that holds another cannot be read, and is isolated as any unreadable record)."""
    parse_target(value)
    return value


StoredTarget = Annotated[str, AfterValidator(stored_target)]


def handler_name(text: str) -> str | None:
    """The handler a target names, or None for any other kind (cheap: the claimer's hot path)."""
    return text.removeprefix(HANDLER_PREFIX) if text.startswith(HANDLER_PREFIX) else None


def target_host(text: str) -> str | None:
    """The host an HTTP target calls (lower case), or None for any other kind; what a host's
    rate limit is keyed by. Cheap enough for the dispatch path: a URL is not checked again (the
    record holding it was, when it was read), only an object in JSON is parsed."""
    if text.startswith("{"):
        try:
            spec = parse_target(text)
        except ValueError:
            return None
        if not isinstance(spec, HttpSpec):
            return None
        text = spec.url
    if not text.startswith(("http://", "https://")):
        return None
    host = urlsplit(text).hostname
    return host.lower() if host else None
