"""boto3 clients, created once per process and injected.

Handlers build one `AwsClients` at first use (never at import time), and the local runtime and the
tests build theirs against moto. botocore's standard retry mode retries throttling with backoff.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

from takt.config import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True)
class AwsClients:
    dynamodb: DynamoDBClient
    sqs: SQSClient


def make_clients(settings: Settings, *, max_pool: int = 32) -> AwsClients:
    """Clients for the configured region and (in local mode) endpoint."""
    config = Config(
        retries={"mode": "standard", "max_attempts": 5},
        max_pool_connections=max_pool,
        connect_timeout=5,
        read_timeout=30,
    )
    session = boto3.session.Session(region_name=settings.region)
    endpoint = settings.aws_endpoint_url
    return AwsClients(
        dynamodb=session.client("dynamodb", endpoint_url=endpoint, config=config),
        sqs=session.client("sqs", endpoint_url=endpoint, config=config),
    )
