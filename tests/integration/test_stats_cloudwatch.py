"""The CloudWatch metrics reader against moto: per-minute statistics of the series the handlers
publish (namespace, `service` dimension), placed on the right minute."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from takt.aws import make_cloudwatch_client
from takt.config import Settings
from takt.stats import CloudWatchMetricsReader, MetricQuery

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch.type_defs import DimensionTypeDef

START = (datetime.now(UTC) - timedelta(minutes=30)).replace(second=0, microsecond=0)


def test_sums_and_maxima_land_on_their_minutes(moto_endpoint: str) -> None:
    client = make_cloudwatch_client(Settings(aws_endpoint_url=moto_endpoint))
    namespace = f"takt-{uuid.uuid4().hex[:8]}"
    service: list[DimensionTypeDef] = [{"Name": "service", "Value": "takt"}]
    data = [
        ("Succeeded", START + timedelta(seconds=5), 2.0),
        ("Succeeded", START + timedelta(seconds=50), 3.0),
        ("Succeeded", START + timedelta(minutes=2, seconds=1), 7.0),
        ("ScheduleLag", START + timedelta(minutes=1, seconds=9), 40.0),
        ("ScheduleLag", START + timedelta(minutes=1, seconds=30), 90.0),
    ]
    client.put_metric_data(
        Namespace=namespace,
        MetricData=[
            {"MetricName": name, "Dimensions": service, "Timestamp": at, "Value": value}
            for name, at, value in data
        ],
    )
    # Another service's series of the same name must not count.
    client.put_metric_data(
        Namespace=namespace,
        MetricData=[
            {
                "MetricName": "Succeeded",
                "Dimensions": [{"Name": "service", "Value": "other"}],
                "Timestamp": START,
                "Value": 100.0,
            }
        ],
    )
    reader = CloudWatchMetricsReader(client, namespace)

    answer = reader.minutely(
        [MetricQuery("ok", "Succeeded", "Sum"), MetricQuery("lag", "ScheduleLag", "Maximum")],
        START,
        4,
    )

    assert answer == {"ok": [5.0, None, 7.0, None], "lag": [None, 90.0, None, None]}
