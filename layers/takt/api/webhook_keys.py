"""The tenant's webhook signing keys: show them, rotate them (takt.tenants.webhook_keys).

A tenant needs its key to verify takt's webhooks, and only its own: the routes act for the
request's tenant (an admin names another with `Takt-Tenant`, as on every route). Reading a
signing key is a write right, not a read one: whoever holds the key can sign webhooks the
tenant's receivers accept, which no read-only caller should be able to do.
`takt tenants webhook-key show|rotate TENANT` calls these routes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, ConfigDict, Field

from takt.api.access import RIGHTS, Caller
from takt.api.errors import ConflictingStateError, ForbiddenError
from takt.api.routing import api_of, caller_of, json_response, responses
from takt.tenants.webhook_keys import DEFAULT_OVERLAP, MAX_OVERLAP, WebhookKey, WebhookKeyError


class WebhookKeyOut(BaseModel):
    generation: int = Field(description="0 for the tenant's first key, one more per rotation")
    secret: str = Field(description="the Standard Webhooks key, `whsec_<base64>`")
    valid_until: str | None = Field(
        description="null for the current key; for the previous one, when it stops signing"
    )


class WebhookKeysOut(BaseModel):
    tenant: str
    keys: list[WebhookKeyOut] = Field(
        description="current first; while a rotation overlaps, the previous key too: every "
        "request carries a `v1,` signature by each"
    )

    @classmethod
    def of(cls, tenant: str, keys: list[WebhookKey]) -> WebhookKeysOut:
        return cls(tenant=tenant, keys=[WebhookKeyOut(**key.to_json()) for key in keys])


class RotateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overlap_sec: int = Field(
        default=int(DEFAULT_OVERLAP.total_seconds()),
        ge=0,
        le=int(MAX_OVERLAP.total_seconds()),
        strict=True,
        description="how long the key being replaced still signs, beside the new one",
    )


router = Router()  # type: ignore[no-untyped-call]


def _keys_caller() -> Caller:
    who = caller_of(router)
    role = who.identity.role
    if role is None or "write" not in RIGHTS[role]:
        raise ForbiddenError(f"the {role} role may not see or rotate signing keys")
    return who


@router.get(
    "/v1/webhook-keys",
    responses=responses({200: "The tenant's signing keys, current first"}, 409),
)
def show_webhook_keys() -> Response[WebhookKeysOut]:
    tenant = _keys_caller().tenant
    api = api_of(router)
    try:
        keys = api.tenant(tenant).webhook_keys.keys(tenant, api.clock.now())
    except WebhookKeyError as exc:
        raise ConflictingStateError(str(exc)) from exc
    return json_response(WebhookKeysOut.of(tenant, keys))


@router.post(
    "/v1/webhook-keys/rotate",
    responses=responses(
        {200: "The tenant's keys after the rotation: the new one, then the one it replaces"},
        409,
    ),
)
def rotate_webhook_key(
    body: Annotated[RotateIn | None, Body()] = None,
) -> Response[WebhookKeysOut]:
    tenant = _keys_caller().tenant
    overlap = timedelta(seconds=(body or RotateIn()).overlap_sec)
    api = api_of(router)
    try:
        keys = api.tenant(tenant).webhook_keys.rotate(tenant, api.clock.now(), overlap)
    except WebhookKeyError as exc:
        raise ConflictingStateError(str(exc)) from exc
    return json_response(WebhookKeysOut.of(tenant, keys))
