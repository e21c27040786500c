"""Secrets that HTTP targets reference by name, read from Secrets Manager when a request is made.

A job stores only the names of its secrets (its bearer token, extra headers, signing key); the
worker reads the values at call time through Powertools' `SecretsProvider`, which keeps each one
for `max_age_sec` (a short TTL: a rotated secret is used within that long, and a busy job does not
read Secrets Manager on every run). Values are never logged, stored or returned: errors name the
secret, never its value.

Every name a tenant references lives under `<prefix><tenant>/`, so one tenant can never make the
worker read another's secret: the API checks this when a job is created or changed, and the worker
checks it again before each read (a job stored before the prefix changed gets the same answer).
The worker's IAM policy allows `GetSecretValue` on `<prefix>*` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import BotoCoreError, ClientError

# A tenant id that could spell a path (`acme/evil`) would reach into another tenant's prefix.
_TENANT = re.compile(r"^[A-Za-z0-9_+=.@-]{1,128}$")
_PERMANENT_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "AccessDeniedException",
        "AccessDenied",
        "InvalidRequestException",
        "InvalidParameterException",
        "DecryptionFailure",
        "ValidationException",
    }
)


class SecretError(Exception):
    """A secret could not be read. `permanent`: retrying cannot help (no such secret, access
    denied, not the tenant's); otherwise (throttling, the network) a later attempt may succeed."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class SecretSource(Protocol):
    """Where a secret's value comes from, by name (Secrets Manager, or a fake in tests)."""

    def get(self, name: str) -> str: ...


def tenant_prefix(prefix: str, tenant_id: str) -> str | None:
    """The prefix every secret of `tenant_id` starts with; None when the tenant id could not be
    told apart from a path, and so may reference no secrets at all."""
    return f"{prefix}{tenant_id}/" if _TENANT.match(tenant_id) else None


def name_problem(name: str, tenant_id: str, prefix: str) -> str | None:
    """Why `tenant_id` may not reference the secret `name`, or None when it may."""
    own = tenant_prefix(prefix, tenant_id)
    if own is None:
        return f"tenant {tenant_id!r} cannot reference secrets (its id is not a name segment)"
    if not name.startswith(own) or len(name) == len(own):
        return f"secret {name!r} is not under this tenant's prefix {own!r}"
    return None


class SecretsManagerSource:
    """Secret values from Secrets Manager, cached per process for `max_age_sec`.

    The client is made on first use (`client_factory`, e.g. `takt.aws.make_secrets_client`), so
    a worker whose targets name no secrets never creates one.
    """

    def __init__(self, client_factory: Callable[[], Any], max_age_sec: int = 60) -> None:
        self._client_factory = client_factory
        self._max_age_sec = max_age_sec
        self._provider: SecretsProvider | None = None

    def get(self, name: str) -> str:
        if self._provider is None:
            self._provider = SecretsProvider(boto3_client=self._client_factory())
        try:
            value = self._provider.get(name, max_age=self._max_age_sec)
        except GetParameterError as exc:
            raise _error(name, exc.__context__) from None
        if not isinstance(value, str):
            raise SecretError(f"secret {name!r} has no string value", permanent=True)
        return value


def _error(name: str, cause: BaseException | None) -> SecretError:
    if isinstance(cause, ClientError):
        code = str(cause.response.get("Error", {}).get("Code", "Unknown"))
        if code == "ResourceNotFoundException":
            return SecretError(f"secret {name!r} not found", permanent=True)
        return SecretError(f"secret {name!r}: {code}", permanent=code in _PERMANENT_CODES)
    if isinstance(cause, BotoCoreError):
        return SecretError(
            f"secret {name!r}: connection failed: {cause.__class__.__name__}", permanent=False
        )
    kind = "" if cause is None else f": {cause.__class__.__name__}"
    return SecretError(f"secret {name!r} could not be read{kind}", permanent=False)
