"""Operational numbers: the metrics of the last hour and the depth of the lanes.

`MetricsReader` is the port: CloudWatch answers it in the cloud (`CloudWatchMetricsReader`, the
series the dashboard and alarms read), and `takt local` answers it from memory
(`MetricsWindow`, fed by the same `add_metric` calls). The console and `takt top` read both
through `GET /v1/stats`, so the numbers they show are the alarms' numbers.
"""

from takt.stats.base import MetricQuery, MetricsReader, Statistic
from takt.stats.cloudwatch import CloudWatchMetricsReader
from takt.stats.queues import LaneDepth, lane_depths
from takt.stats.window import MetricsWindow

__all__ = [
    "CloudWatchMetricsReader",
    "LaneDepth",
    "MetricQuery",
    "MetricsReader",
    "MetricsWindow",
    "Statistic",
    "lane_depths",
]
