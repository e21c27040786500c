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
    # Provisioned capacity: one write (read) capacity unit for an hour, table or index alike.
    dynamodb_write_capacity_unit_hour: float = 0.00065
    dynamodb_read_capacity_unit_hour: float = 0.00013
    sqs_request_per_million: float = 0.40
    lambda_request_per_million: float = 0.20
    # arm64 (Graviton), the architecture every takt function runs on.
    lambda_gb_second: float = 0.0000133334
    api_gateway_http_per_million: float = 1.00
    logs_ingested_per_gb: float = 0.50
    # Active tracing records about 5 % of requests with X-Ray's default sampling rule.
    xray_trace_per_million: float = 5.00
    logs_stored_per_gb_month: float = 0.03
    # PutMetricData (`takt worker` sends its metrics once a minute): $0.01 per 1,000 requests.
    cloudwatch_put_metric_data_per_million: float = 10.00
    eventbridge_scheduler_per_million: float = 1.00
    step_functions_per_thousand_transitions: float = 0.025
    # Step Functions Express: per request, and per GB-second in 64 MB steps (the first tier).
    step_functions_express_per_million: float = 1.00
    step_functions_express_gb_second: float = 0.00001667
    # The Fargate worker's VPC has one NAT gateway: by the hour and by the GB it carries.
    nat_gateway_hour: float = 0.045
    nat_gateway_per_gb: float = 0.045
    # Fargate, Linux on arm64 (Graviton), what the worker service runs on.
    fargate_vcpu_hour: float = 0.03238
    fargate_gb_hour: float = 0.00356


US_EAST_1 = Prices()
