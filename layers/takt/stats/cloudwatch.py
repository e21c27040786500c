"""The metrics of the last hour from CloudWatch: the series the dashboard and alarms read.

The handlers publish EMF with the single dimension `service`, so each metric is one series and a
query names it exactly. One GetMetricData call fetches every series (it takes up to 500); it is
billed per metric requested, which is why the console refreshes its overview every few seconds,
not continuously.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from takt.observability import SERVICE
from takt.stats.base import MINUTE_SEC, MetricQuery

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient


class CloudWatchMetricsReader:
    def __init__(self, client: CloudWatchClient, namespace: str, service: str = SERVICE) -> None:
        self._client = client
        self._namespace = namespace
        self._service = service

    def since(self) -> datetime | None:
        """CloudWatch keeps every minute of the window (15 days at one-minute resolution)."""
        return None

    def minutely(
        self, queries: list[MetricQuery], start: datetime, minutes: int
    ) -> dict[str, list[float | None]]:
        ids = {f"q{i}": query.key for i, query in enumerate(queries)}
        requests: list[Any] = [
            {
                "Id": query_id,
                "MetricStat": {
                    "Metric": {
                        "Namespace": self._namespace,
                        "MetricName": query.metric,
                        "Dimensions": [{"Name": "service", "Value": self._service}],
                    },
                    "Period": MINUTE_SEC,
                    "Stat": query.stat,
                },
                "ReturnData": True,
            }
            for query_id, query in zip(ids, queries, strict=True)
        ]
        answer: dict[str, list[float | None]] = {key: [None] * minutes for key in ids.values()}
        pages = self._client.get_paginator("get_metric_data").paginate(
            MetricDataQueries=requests,
            StartTime=start,
            EndTime=start + timedelta(minutes=minutes),
            ScanBy="TimestampAscending",
        )
        for page in pages:
            for result in page["MetricDataResults"]:
                series = answer[ids[result["Id"]]]
                for stamp, value in zip(result["Timestamps"], result["Values"], strict=True):
                    index = int((stamp - start).total_seconds()) // MINUTE_SEC
                    if 0 <= index < minutes:
                        series[index] = value
        return answer
