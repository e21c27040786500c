"""The targets' side the worker and the watchdog share (webhook keys, OIDC, HTTP and every target
kind, notifications), each made the one way every builder makes it. Only the functions that call
targets import this module: it brings in the HTTP stack and every target kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from takt.aws import (
    AwsClients,
    credential_source,
    make_ecs_client,
    make_kms_client,
    make_lambda_client,
    make_secrets_client,
    make_states_client,
)
from takt.clock import Clock
from takt.config import Settings
from takt.handlers import load_modules, registry
from takt.notify.notifier import Notifier
from takt.store.jobs import JobStore
from takt.targets.container import ContainerTarget, Placement
from takt.targets.egress import EgressPolicy
from takt.targets.http import HttpTarget
from takt.targets.invoke import AwsInvokeTarget
from takt.targets.oidc import OidcSigner
from takt.targets.publish import QueueTopicTarget
from takt.targets.router import TargetRouter
from takt.targets.secrets import SecretsManagerSource
from takt.tenants.webhook_keys import WebhookKeys

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def webhook_keys(settings: Settings, dynamodb: DynamoDBClient) -> WebhookKeys:
    """Each tenant's signing keys, derived from the deployment's master secret: by name from
    Secrets Manager, else the plain value (local use), else none (nothing is signed)."""
    source = SecretsManagerSource(lambda: make_secrets_client(settings), settings.secret_cache_sec)

    def master() -> str | None:
        if settings.signing_secret_name is not None:
            return source.get(settings.signing_secret_name)
        return settings.signing_secret

    return WebhookKeys(dynamodb, settings.tenants_table, master, settings.secret_cache_sec)


def oidc_signer(settings: Settings) -> OidcSigner | None:
    """The OIDC token signer, when the deployment names a KMS key for it."""
    if settings.oidc_key_id is None:
        return None
    return OidcSigner(lambda: make_kms_client(settings), settings.oidc_key_id, settings.oidc_issuer)


def http_target(
    settings: Settings, clock: Clock, keys: WebhookKeys, oidc: OidcSigner | None
) -> HttpTarget:
    """HTTP targets and webhook notifications: the egress policy, secrets and signing."""
    return HttpTarget(
        EgressPolicy(settings.egress_allow),
        SecretsManagerSource(lambda: make_secrets_client(settings), settings.secret_cache_sec),
        tenant_keys=lambda tenant_id: keys.signing_keys(tenant_id, clock.now()),
        secret_prefix=settings.secret_prefix,
        pool_size=settings.http_pool_size,
        credentials=credential_source(settings),
        tokens=oidc,
    )


def target_router(settings: Settings, clients: AwsClients, http: HttpTarget) -> TargetRouter:
    """Every target kind, with the handlers of `handler_modules` (imported here, once)."""
    load_modules(settings.handler_module_names)
    return TargetRouter(
        http,
        QueueTopicTarget(clients.sqs, clients.sns, clients.events, settings.region),
        registry,
        AwsInvokeTarget(
            lambda timeout: make_lambda_client(settings, timeout),
            lambda: make_states_client(settings),
            settings.region,
        ),
        container_target(settings),
    )


def container_target(settings: Settings) -> ContainerTarget | None:
    """Container targets, when the deployment names a cluster for their tasks."""
    if settings.container_cluster is None:
        return None
    placement = Placement(
        cluster=settings.container_cluster,
        subnets=settings.container_subnets,
        security_groups=settings.container_security_groups,
        execution_role_arn=settings.container_execution_role_arn,
        task_role_arn=settings.container_task_role_arn,
        log_group=settings.container_log_group,
        log_prefix=settings.container_log_prefix,
        region=settings.region,
        public_ip=settings.container_public_ip,
        poll_sec=settings.container_poll_sec,
    )
    return ContainerTarget(lambda: make_ecs_client(settings), placement)


def notifier(settings: Settings, clients: AwsClients, jobs: JobStore, http: HttpTarget) -> Notifier:
    return Notifier(settings, jobs, http, clients.sns, clients.events)


def signed_http_target(settings: Settings, clients: AwsClients, clock: Clock) -> HttpTarget:
    """The HTTP target as the worker and the watchdog's notifications use it: signing with each
    tenant's webhook keys, and with OIDC tokens when the deployment names a key."""
    keys = webhook_keys(settings, clients.dynamodb)
    return http_target(settings, clock, keys, oidc_signer(settings))
