"""Logging, metrics and tracing, set up once for every function (Powertools).

Metric names are the contract with the CDK dashboard and alarms: `infra/metric_names.py` lists
them and docs/DEPLOY.md documents each. Tracing is on in Lambda (active tracing is enabled by the
CDK app) and off elsewhere, as Powertools decides from the environment.
"""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

# An invocation that had nothing to count (a duplicate message, an idle sweep) is normal here.
warnings.filterwarnings("ignore", message="No application metrics to publish")

logger = Logger(service="takt")
metrics = Metrics(namespace="takt", service="takt")
tracer = Tracer(service="takt")

__all__ = ["MetricUnit", "logger", "metrics", "tracer"]
