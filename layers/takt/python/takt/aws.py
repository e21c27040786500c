"""boto3 clients, created once per process and injected.

Handlers build one `AwsClients` at first use (never at import time), and the local runtime and the
tests build theirs against moto. botocore's standard retry mode retries throttling with backoff.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from takt.config import Settings

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient

    from takt.metering import Meter


@dataclass(frozen=True)
class AwsClients:
    dynamodb: DynamoDBClient
    sqs: SQSClient
    # For queue-topic targets (SQS queues use `sqs`).
    sns: SNSClient
    events: EventBridgeClient


def client_config(max_pool: int) -> Config:
    return Config(
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=max_pool,
        connect_timeout=5,
        read_timeout=30,
    )


def make_clients(
    settings: Settings, *, max_pool: int = 32, meter: Meter | None = None
) -> AwsClients:
    """Clients for the configured region and (in local mode) endpoint.

    With a `meter`, every request the clients make is counted and priced by it (`takt bench`);
    the meter only listens to botocore's events and changes no request.
    """
    config = client_config(max_pool)
    session = boto3.session.Session(region_name=settings.region)
    endpoint = settings.aws_endpoint_url
    clients = AwsClients(
        dynamodb=session.client("dynamodb", endpoint_url=endpoint, config=config),
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


def make_cloudwatch_client(settings: Settings) -> CloudWatchClient:
    """A CloudWatch client, made apart from `make_clients`: only the API's stats route reads
    metrics, so the other functions never pay for creating it."""
    session = boto3.session.Session(region_name=settings.region)
    return session.client(
        "cloudwatch", endpoint_url=settings.aws_endpoint_url, config=client_config(4)
    )


def make_sts_client(settings: Settings) -> Any:
    """An STS client, for the API's per-tenant sessions (`takt.tenants.sessions`). (Typed `Any`:
    the project carries no STS stubs.)"""
    session = boto3.session.Session(region_name=settings.region)
    return session.client("sts", endpoint_url=settings.aws_endpoint_url, config=client_config(4))
