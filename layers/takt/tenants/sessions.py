"""Per-tenant DynamoDB clients for the API: a tenant's requests made as that tenant.

With `TAKT_TENANT_DATA_ROLE_ARN` set (the CDK app sets it to its `TenantDataRole`), the API
assumes that role once per tenant with the session tag `tenant=<id>`. The role lets a session
touch only items whose partition key is its tenant or starts with `<tenant>#`
(`dynamodb:LeadingKeys`, docs/SECURITY.md), so even a defect in the API's own code cannot read or
change another tenant's items: IAM refuses the call. A session is used until shortly before its
credentials expire, then assumed again.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import boto3

from takt.aws import client_config
from takt.clock import Clock

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from takt.config import Settings

# The session tag the role's policy reads (`${aws:PrincipalTag/tenant}`); infra/tenant_access.py.
TENANT_TAG = "tenant"
SESSION_SEC = 3600
# A session is replaced this long before its credentials expire.
RENEW_BEFORE = timedelta(minutes=5)
_NOT_IN_SESSION_NAME = re.compile(r"[^\w+=,.@-]")
# One function instance keeps the sessions of at most this many tenants (each holds a client).
MAX_TENANT_SESSIONS = 64
T = TypeVar("T")


@dataclass(frozen=True)
class TenantSession:
    dynamodb: DynamoDBClient
    renew_at: datetime


def session_name(tenant_id: str) -> str:
    """An STS session name (2-64 of `[\\w+=,.@-]`) that shows the tenant in CloudTrail."""
    return ("takt-api-" + _NOT_IN_SESSION_NAME.sub("-", tenant_id))[:64]


class TenantSessions:
    """Opens a tenant's session: AssumeRole on the tenant-data role, tagged with the tenant."""

    def __init__(self, settings: Settings, sts: Any, role_arn: str) -> None:
        self._settings = settings
        self._sts = sts
        self._role_arn = role_arn

    def open(self, tenant_id: str, now: datetime) -> TenantSession:
        """A session for `tenant_id`, to be renewed `RENEW_BEFORE` ahead of its lifetime counted
        from `now` (not from STS's expiry time, so a skewed clock cannot keep a dead session)."""
        credentials = self._sts.assume_role(
            RoleArn=self._role_arn,
            RoleSessionName=session_name(tenant_id),
            Tags=[{"Key": TENANT_TAG, "Value": tenant_id}],
            DurationSeconds=SESSION_SEC,
        )["Credentials"]
        session = boto3.session.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name=self._settings.region,
        )
        client = session.client(
            "dynamodb", endpoint_url=self._settings.aws_endpoint_url, config=client_config(32)
        )
        return TenantSession(client, now + timedelta(seconds=SESSION_SEC) - RENEW_BEFORE)


class PerTenant(Generic[T]):
    """One `T` per tenant, built over that tenant's own DynamoDB session and built again when
    the session is due for renewal; the sessions of the `MAX_TENANT_SESSIONS` most recently
    used tenants are kept, the least recent dropped."""

    def __init__(
        self, sessions: TenantSessions, build: Callable[[DynamoDBClient], T], clock: Clock
    ) -> None:
        self._sessions = sessions
        self._build = build
        self._clock = clock
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[datetime, T]] = {}

    def get(self, tenant_id: str) -> T:
        with self._lock:
            now = self._clock.now()
            kept = self._kept.pop(tenant_id, None)
            if kept is None or now >= kept[0]:
                session = self._sessions.open(tenant_id, now)
                kept = (session.renew_at, self._build(session.dynamodb))
            # Most recently used last.
            self._kept[tenant_id] = kept
            while len(self._kept) > MAX_TENANT_SESSIONS:
                del self._kept[next(iter(self._kept))]
            return kept[1]
