"""boto3 clients, created once per process and injected.

Handlers build one `AwsClients` at first use (never at import time), and the local runtime and the
tests build theirs against moto. botocore's standard retry mode retries throttling with backoff.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import boto3
from botocore.config import Config
from botocore.credentials import Credentials, ReadOnlyCredentials

from takt.config import Settings

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient


class ClientObserver(Protocol):
    """What may listen to every request the clients make (`takt bench`'s meter counts and
    prices them); it only subscribes to botocore's events and changes no request."""

    def attach(self, client: Any) -> None: ...


@dataclass(frozen=True)
class AwsClients:
    dynamodb: DynamoDBClient
    sqs: SQSClient
    # For queue-topic targets (SQS queues use `sqs`).
    sns: SNSClient
    events: EventBridgeClient


def client_config(max_pool: int, *, validate: bool = True) -> Config:
    return Config(
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=max_pool,
        connect_timeout=5,
        read_timeout=30,
        parameter_validation=validate,
    )


def make_clients(
    settings: Settings, *, max_pool: int = 32, meter: ClientObserver | None = None
) -> AwsClients:
    """Clients for the configured region and (in local mode) endpoint.

    With a `meter`, every request the clients make is counted and priced by it (`takt bench`);
    the meter only listens to botocore's events and changes no request.
    """
    # A worker runs a batch's runs at once, each making its calls and heartbeats from threads
    # of its own: with fewer pooled connections than that, botocore opens and drops extra ones.
    pool = max(max_pool, 2 * settings.worker_batch_concurrency)
    config = client_config(pool)
    session = boto3.session.Session(region_name=settings.region)
    endpoint = settings.aws_endpoint_url
    clients = AwsClients(
        # Without botocore's parameter validation, about a seventh of a call's CPU, and a claim
        # is bound by its calls' CPU (docs/CAPACITY.md, "The claimer's CPU per item"). Every
        # DynamoDB request is built by the stores (`takt.store`, sealed) from typed records,
        # which mypy checks against botocore's shapes, and a value DynamoDB refuses still comes
        # back refused: a ValidationException, which `is_record_fault` reads as it read
        # botocore's ParamValidationError.
        dynamodb=session.client(
            "dynamodb", endpoint_url=endpoint, config=client_config(pool, validate=False)
        ),
        sqs=session.client("sqs", endpoint_url=endpoint, config=config),
        sns=session.client("sns", endpoint_url=endpoint, config=config),
        events=session.client("events", endpoint_url=endpoint, config=config),
    )
    if meter is not None:
        for client in (clients.dynamodb, clients.sqs, clients.sns, clients.events):
            meter.attach(client)
    return clients


def make_secrets_client(settings: Settings) -> Any:
    """A Secrets Manager client for the secrets HTTP targets name, made on the first such call:
    a worker whose targets name no secrets never creates one. (Typed `Any`: the project carries
    no Secrets Manager stubs, and only Powertools' `SecretsProvider` calls it.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client(
        "secretsmanager", endpoint_url=settings.aws_endpoint_url, config=client_config(8)
    )


def credential_source(settings: Settings) -> Callable[[], ReadOnlyCredentials | None]:
    """The process's AWS credentials (its role's, refreshed by botocore as they near expiry),
    frozen at each call: what SigV4-signed HTTP targets sign with. Resolved on first use, so a
    worker without such targets never looks them up."""
    found: list[Credentials | None] = []

    def current() -> ReadOnlyCredentials | None:
        if not found:
            found.append(boto3.session.Session(region_name=settings.region).get_credentials())
        credentials = found[0]
        return None if credentials is None else credentials.get_frozen_credentials()

    return current


def make_lambda_client(settings: Settings, read_timeout_sec: int | None) -> Any:
    """A Lambda client for Lambda targets. With a read timeout (synchronous calls) it makes one
    attempt only: retrying an invocation whose answer timed out would run the function twice
    (throttling comes back as a retryable outcome, and takt's own backoff retries it). Without
    (asynchronous calls, whose retries only queue a deduplicated event again) it retries as the
    other clients do. (Typed `Any`: one module uses it.)"""
    session = boto3.session.Session(region_name=settings.region)
    config = client_config(8)
    if read_timeout_sec is not None:
        config = config.merge(
            Config(
                read_timeout=read_timeout_sec,
                retries={"mode": "standard", "total_max_attempts": 1},
            )
        )
    return session.client("lambda", endpoint_url=settings.aws_endpoint_url, config=config)


def make_states_client(settings: Settings) -> Any:
    """A Step Functions client for state machine targets, made on the first such call. (Typed
    `Any`: the project carries no Step Functions stubs.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client(
        "stepfunctions", endpoint_url=settings.aws_endpoint_url, config=client_config(8)
    )


def make_ecs_client(settings: Settings) -> Any:
    """An ECS client for container targets, made on the first such call. (Typed `Any`: the
    project carries no ECS stubs.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client("ecs", endpoint_url=settings.aws_endpoint_url, config=client_config(8))


def make_kms_client(settings: Settings) -> Any:
    """A KMS client for signing OIDC tokens, made on the first token. (Typed `Any`: the project
    carries no KMS stubs.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client("kms", endpoint_url=settings.aws_endpoint_url, config=client_config(4))


def make_cloudwatch_client(settings: Settings) -> CloudWatchClient:
    """A CloudWatch client, made apart from `make_clients`: only the API's stats route reads
    metrics, so the other functions never pay for creating it."""
    session = boto3.session.Session(region_name=settings.region)
    return session.client(
        "cloudwatch", endpoint_url=settings.aws_endpoint_url, config=client_config(4)
    )


def make_autoscaling_client(settings: Settings) -> Any:
    """An Application Auto Scaling client, for the watchdog's scale-ahead step
    (`takt.dispatch.ahead`), made only when a Fargate worker service is configured. (Typed `Any`:
    the project carries no Application Auto Scaling stubs.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client(
        "application-autoscaling", endpoint_url=settings.aws_endpoint_url, config=client_config(2)
    )


def make_sts_client(settings: Settings) -> Any:
    """An STS client, for the API's per-tenant sessions (`takt.tenants.sessions`). (Typed `Any`:
    the project carries no STS stubs.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client("sts", endpoint_url=settings.aws_endpoint_url, config=client_config(4))


def make_region_lease_client(settings: Settings) -> DynamoDBClient:
    """A DynamoDB client for the region lease table alone, at its own endpoint when one is set:
    locally every region's process shares one witness moto for that table
    (`region_lease_endpoint_url`), while each has its own for the others. In AWS the MRSC table
    is read at the regional endpoint like every other table."""
    session = boto3.session.Session(region_name=settings.region)
    endpoint = settings.region_lease_endpoint_url or settings.aws_endpoint_url
    return session.client("dynamodb", endpoint_url=endpoint, config=client_config(8))


def in_region(settings: Settings, region: str) -> Settings:
    """`settings` for the clients of another region of the deployment: its name, and locally its
    own moto endpoint (`region_endpoints`), so the API can write in the lease holder's replica."""
    endpoint = settings.region_endpoints.get(region, settings.aws_endpoint_url)
    return settings.model_copy(update={"region": region, "aws_endpoint_url": endpoint})


def make_dynamodb_client(settings: Settings) -> DynamoDBClient:
    """A DynamoDB client for the settings' region and endpoint (`in_region`)."""
    session = boto3.session.Session(region_name=settings.region)
    return session.client(
        "dynamodb", endpoint_url=settings.aws_endpoint_url, config=client_config(16)
    )
