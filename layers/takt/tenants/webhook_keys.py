"""Each tenant's webhook signing keys: derived from the deployment's master secret, rotated.

One key shared by every tenant would let any tenant that can verify takt's webhooks forge them
to every other tenant's receivers. So each tenant signs with its own key, derived with HKDF
(RFC 5869, SHA-256) from the deployment's master secret, the tenant id and a generation number:

    key(tenant, n) = HKDF(master, salt="takt webhook keys", info="v1\\0<tenant>\\0<n>")

Knowing one tenant's key tells nothing about another's or about the master (HKDF's output is a
pseudo-random function of its info), and nothing per tenant is stored but a small item
(`<tenant>`, `webhook-key`) in the tenants table: the current generation and, after a rotation,
until when the previous one still signs. Deriving instead of storing a secret per tenant costs
no Secrets Manager secret per tenant and no read of one per call; the master alone is secret.

Rotation (Standard Webhooks allows several signatures in one `webhook-signature` header): a
rotation moves the generation on and keeps the previous key signing for an overlap, so every
request carries both `v1,` signatures until the overlap ends, and a receiver may switch to the
new key whenever it likes within it. A second rotation within the overlap ends the first one's
(only one previous key signs).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from takt.store.webhook_keys import KeyState, KeyStates
from takt.targets.http import sign
from takt.targets.secrets import SecretError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

DEFAULT_OVERLAP = timedelta(hours=24)
MAX_OVERLAP = timedelta(days=30)
_SALT = b"takt webhook keys"


class WebhookKeyError(SecretError):
    """The keys cannot be had: the deployment has no master secret or an unusable one, or a
    rotation lost the race with another rotation. Retrying the same call cannot help (a lost
    rotation is the caller's to decide again once it has read the keys)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


@dataclass(frozen=True)
class WebhookKey:
    """One of a tenant's signing keys, as a Standard Webhooks secret (`whsec_<base64>`)."""

    generation: int
    secret: str
    # None for the current key; the end of its overlap for the previous one.
    valid_until: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "secret": self.secret,
            "valid_until": None
            if self.valid_until is None
            else self.valid_until.isoformat().replace("+00:00", "Z"),
        }


def master_bytes(master: str) -> bytes:
    """The master secret's key material: a `whsec_` secret's decoded bytes, else its text."""
    if master.startswith("whsec_"):
        try:
            return base64.b64decode(master.removeprefix("whsec_"), validate=True)
        except binascii.Error:
            raise WebhookKeyError("the master signing secret is not a base64 whsec_ key") from None
    return master.encode()


def derive(master: bytes, tenant_id: str, generation: int) -> str:
    """The tenant's key of `generation`, as a `whsec_` secret (32 bytes: one HKDF block)."""
    prk = hmac.new(_SALT, master, hashlib.sha256).digest()
    info = b"v1\0" + tenant_id.encode() + b"\0" + str(generation).encode()
    okm = hmac.new(prk, info + b"\x01", hashlib.sha256).digest()
    return "whsec_" + base64.b64encode(okm).decode()


def verify(secrets: list[str], msg_id: str, timestamp: str, body: bytes, signatures: str) -> bool:
    """Whether any `v1,` signature in a `webhook-signature` header was made with one of
    `secrets` over this message: what a receiver checks (`takt receive`, the tests' receivers).
    The timestamp's freshness is the receiver's own policy and is not judged here."""
    offered = [part for part in signatures.split(" ") if part.startswith("v1,")]
    if not offered or not (timestamp.isascii() and timestamp.isdigit()):
        return False
    for secret in secrets:
        expected = sign(secret, msg_id, int(timestamp), body)
        if any(hmac.compare_digest(expected, candidate) for candidate in offered):
            return True
    return False


class WebhookKeys:
    """Reads and rotates tenants' keys; `master` gives the deployment's master secret (None: the
    deployment signs nothing), read only when a key is needed.

    `signing_keys` is the worker's path: its answers are kept per tenant for `cache_sec`, so a
    busy tenant costs one read of its item a minute, and a rotation signs within that long.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        master: Callable[[], str | None],
        cache_sec: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._states = KeyStates(client, table)
        self._master = master
        self._cache_sec = cache_sec
        self._monotonic = monotonic
        self._cache: dict[str, tuple[float, KeyState]] = {}
        self._lock = threading.Lock()

    def signs(self) -> bool:
        """Whether the deployment has a master secret, so requests are signed at all."""
        return self._master() is not None

    def keys(self, tenant_id: str, now: datetime) -> list[WebhookKey]:
        """The tenant's valid keys, current first (read consistently: for show and rotate)."""
        return self._keys(tenant_id, self._states.read(tenant_id), now)

    def signing_keys(self, tenant_id: str, now: datetime) -> list[str]:
        """The secrets a request of the tenant is signed with now (cached, see the class)."""
        if self._master() is None:
            return []
        with self._lock:
            cached = self._cache.get(tenant_id)
        if cached is None or self._monotonic() - cached[0] >= self._cache_sec:
            cached = (self._monotonic(), self._states.read(tenant_id))
            with self._lock:
                self._cache[tenant_id] = cached
        return [key.secret for key in self._keys(tenant_id, cached[1], now)]

    def rotate(self, tenant_id: str, now: datetime, overlap: timedelta) -> list[WebhookKey]:
        """Move the tenant to a new key; the one it had signs too for `overlap` more.

        One conditional write on the generation read (docs/SECURITY.md): of rotations racing
        from one generation, one moves it on and the others get WebhookKeyError (409) without
        trying again, since a retry would rotate away the key the winner was just given. The
        answer is the state this rotation wrote, not a later read that a racing rotation may
        already have moved on.
        """
        if not timedelta(0) <= overlap <= MAX_OVERLAP:
            raise ValueError(f"overlap must be between 0 and {MAX_OVERLAP.days} days")
        self._need_master()
        state = self._states.read(tenant_id)
        until_ms = int((now + overlap).timestamp() * 1000)
        if not self._states.advance(tenant_id, state, until_ms):
            raise WebhookKeyError(
                f"tenant {tenant_id}'s key was rotated by another request meanwhile (from "
                f"generation {state.generation}); read the keys and rotate again if still needed"
            )
        with self._lock:
            self._cache.pop(tenant_id, None)
        written = KeyState(generation=state.generation + 1, previous_until_ms=until_ms)
        return self._keys(tenant_id, written, now)

    def _keys(self, tenant_id: str, state: KeyState, now: datetime) -> list[WebhookKey]:
        master = master_bytes(self._need_master())
        keys = [WebhookKey(state.generation, derive(master, tenant_id, state.generation))]
        until = state.previous_until_ms
        if state.generation > 0 and until is not None and until > now.timestamp() * 1000:
            previous = state.generation - 1
            keys.append(
                WebhookKey(
                    previous,
                    derive(master, tenant_id, previous),
                    datetime.fromtimestamp(until / 1000, UTC),
                )
            )
        return keys

    def _need_master(self) -> str:
        master = self._master()
        if master is None:
            raise WebhookKeyError(
                "this deployment signs no webhooks: it has no master signing secret "
                "(TAKT_SIGNING_SECRET_NAME or TAKT_SIGNING_SECRET)"
            )
        return master
