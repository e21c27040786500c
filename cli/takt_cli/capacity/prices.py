"""us-east-1 list prices (USD) that the cost model and the simulator use, in one place.

Free tiers are left out: a capacity plan prices the marginal execution. Each figure is the
published on-demand price as of this writing; change them here and every report follows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Prices:
    dynamodb_write_unit_per_million: float = 0.625
    dynamodb_read_unit_per_million: float = 0.125
    dynamodb_storage_gb_month: float = 0.25
    sqs_request_per_million: float = 0.40
    lambda_request_per_million: float = 0.20
    # arm64 (Graviton), the architecture every takt function runs on.
    lambda_gb_second: float = 0.0000133334
    api_gateway_http_per_million: float = 1.00
    logs_ingested_per_gb: float = 0.50
    # Active tracing records about 5 % of requests with X-Ray's default sampling rule.
    xray_trace_per_million: float = 5.00
    eventbridge_scheduler_per_million: float = 1.00
    step_functions_per_thousand_transitions: float = 0.025


US_EAST_1 = Prices()
