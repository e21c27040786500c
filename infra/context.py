"""The deployment knobs, read once from CDK context and checked before anything is built.

cdk.json holds the shipped values, and `cdk deploy -c key=value` overrides one. Values given with
`-c` arrive as strings, those from cdk.json as JSON values, so every reader accepts both. A bad
value fails the synth with the knob's name in the message instead of surfacing as a CloudFormation
error minutes into a deployment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from constructs import Node

from takt.config import LANES

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
# Lambda's limits for an SQS event source's maximum concurrency.
MIN_LANE_CONCURRENCY = 2
MAX_LANE_CONCURRENCY = 1000
# Our start-lag budget (p99 under 2 s) leaves at most one second to batching.
MAX_BATCHING_WINDOW_SEC = 1


class ContextError(ValueError):
    """A context value is missing or out of range; the message names the knob."""


@dataclass(frozen=True)
class LaneTuning:
    """How the worker consumes one lane."""

    max_concurrency: int
    batching_window_sec: int


@dataclass(frozen=True)
class JwtAuth:
    """The JWT authorizer's issuer (an OIDC URL) and the audiences it accepts."""

    issuer: str
    audience: tuple[str, ...]


@dataclass(frozen=True)
class DeployConfig:
    """Everything the stacks take from context. `jwt` is None when the API uses IAM (SigV4)."""

    jwt: JwtAuth | None
    api_rate_limit: float
    api_burst_limit: int
    log_level: str
    lanes: dict[str, LaneTuning]
    recovery_alarm_threshold: int
    alarm_email: str | None

    @classmethod
    def from_context(cls, node: Node) -> DeployConfig:
        """Read and check every knob; raise ContextError naming the first bad one."""
        auth = _required(node, "auth")
        if auth not in ("iam", "jwt"):
            raise ContextError(f"context 'auth' must be 'iam' or 'jwt', not {auth!r}")
        jwt = None
        if auth == "jwt":
            issuer = _optional_str(node, "jwtIssuer")
            audience = _string_list(node, "jwtAudience")
            if not issuer or not audience:
                raise ContextError("context 'auth=jwt' needs 'jwtIssuer' and 'jwtAudience'")
            jwt = JwtAuth(issuer=issuer, audience=audience)
        log_level = str(_required(node, "logLevel")).upper()
        if log_level not in LOG_LEVELS:
            raise ContextError(f"context 'logLevel' must be one of {LOG_LEVELS}")
        return cls(
            jwt=jwt,
            api_rate_limit=_number(node, "apiRateLimit", minimum=1),
            api_burst_limit=_integer(node, "apiBurstLimit", minimum=1),
            log_level=log_level,
            lanes=_lanes(node),
            recovery_alarm_threshold=_integer(node, "recoveryAlarmThreshold", minimum=1),
            alarm_email=_optional_str(node, "alarmEmail"),
        )


def _raw(node: Node, key: str) -> object:
    value = node.try_get_context(key)
    # `-c key=` passes an empty string: treat it as unset rather than as a value.
    return None if value == "" else value


def _required(node: Node, key: str) -> object:
    value = _raw(node, key)
    if value is None:
        raise ContextError(f"context {key!r} is missing: set it in cdk.json or pass -c {key}=...")
    return value


def _optional_str(node: Node, key: str) -> str | None:
    value = _raw(node, key)
    return None if value is None else str(value)


def _string_list(node: Node, key: str) -> tuple[str, ...]:
    value = _raw(node, key)
    if value is None:
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    return tuple(item.strip() for item in map(str, items) if item.strip())


def _number(node: Node, key: str, *, minimum: float) -> float:
    value = _required(node, key)
    try:
        number = float(str(value))
    except ValueError:
        raise ContextError(f"context {key!r} must be a number, not {value!r}") from None
    if number < minimum:
        raise ContextError(f"context {key!r} must be at least {minimum}")
    return number


def _integer(node: Node, key: str, *, minimum: int) -> int:
    return _bounded_int(_required(node, key), key, minimum=minimum)


def _bounded_int(value: object, what: str, *, minimum: int, maximum: int | None = None) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise ContextError(f"context {what!r} must be an integer, not {value!r}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
        raise ContextError(f"context {what!r} must be {bound}, not {number}")
    return number


def _lanes(node: Node) -> dict[str, LaneTuning]:
    value = _required(node, "lanes")
    try:
        lanes = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ContextError(f"context 'lanes' must be a JSON object, not {value!r}") from None
    if not isinstance(lanes, dict) or set(lanes) != set(LANES):
        raise ContextError(f"context 'lanes' must map exactly the lanes {LANES} to settings")
    tuning = {}
    for lane in LANES:
        settings = lanes[lane]
        if not isinstance(settings, dict):
            raise ContextError(f"context 'lanes.{lane}' must be an object")
        tuning[lane] = LaneTuning(
            max_concurrency=_bounded_int(
                settings.get("maxConcurrency"),
                f"lanes.{lane}.maxConcurrency",
                minimum=MIN_LANE_CONCURRENCY,
                maximum=MAX_LANE_CONCURRENCY,
            ),
            batching_window_sec=_bounded_int(
                settings.get("batchingWindowSec"),
                f"lanes.{lane}.batchingWindowSec",
                minimum=0,
                maximum=MAX_BATCHING_WINDOW_SEC,
            ),
        )
    return tuning
