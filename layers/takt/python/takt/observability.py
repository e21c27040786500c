"""Logging, metrics and tracing, set up once for every function (Powertools).

Metric names are the contract with the CDK dashboard and alarms (docs/OPERATIONS.md).
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger(service="takt")
metrics = Metrics(namespace="takt", service="takt")
tracer = Tracer(service="takt", disabled=True)

__all__ = ["MetricUnit", "logger", "metrics", "tracer"]
