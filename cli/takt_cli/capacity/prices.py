"""us-east-1 list prices (USD), in one table that every cost in the tooling reads: the cost per
million executions and the simulator (`Prices`, `US_EAST_1`) and the idle cost of a deployment
(`takt_cli.capacity.idle`, which prints the ones it uses beside its tables).

Free tiers are left out: a capacity plan prices the marginal execution, and an idle deployment's
cost is what it pays on an account whose free tier is spent. Each figure is the on-demand price
AWS publishes on its pricing pages for us-east-1, as of this writing; change one here and every
report follows (tests/unit/capacity/test_capacity_prices.py checks no other module writes one).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    """A list price as AWS states it: `listed` USD for `per` of `unit`."""

    listed: float
    unit: str
    per: float = 1

    @property
    def usd(self) -> float:
        """The price of one unit."""
        return self.listed / self.per

    def __str__(self) -> str:
        amount = f"${amount_text(self.listed)}"
        return f"{amount}/M" if self.per == 1e6 else amount


def amount_text(usd: float) -> str:
    """A price with its significant digits and at least cents: 0.20, 0.125, 0.0000133334."""
    digits = f"{usd:.10f}".rstrip("0")
    whole, _, fraction = digits.partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"


MILLION = 1e6

LIST_PRICES: dict[str, Price] = {
    "dynamodb_write_unit_per_million": Price(
        0.625, "DynamoDB on-demand write request units, per million", MILLION
    ),
    "dynamodb_read_unit_per_million": Price(
        0.125, "DynamoDB on-demand read request units, per million", MILLION
    ),
    "dynamodb_storage_gb_month": Price(0.25, "DynamoDB storage, per GB-month"),
    # Provisioned capacity: one write (read) capacity unit for an hour, table or index alike.
    "dynamodb_write_capacity_unit_hour": Price(
        0.00065, "DynamoDB provisioned write capacity unit, per hour"
    ),
    "dynamodb_read_capacity_unit_hour": Price(
        0.00013, "DynamoDB provisioned read capacity unit, per hour"
    ),
    "sqs_request_per_million": Price(0.40, "SQS standard requests, per million", MILLION),
    "lambda_request_per_million": Price(0.20, "Lambda requests, per million", MILLION),
    # arm64 (Graviton), the architecture every takt function runs on.
    "lambda_gb_second": Price(0.0000133334, "Lambda arm64 compute, per GB-second"),
    "api_gateway_http_per_million": Price(
        1.00, "API Gateway HTTP API requests, per million", MILLION
    ),
    "logs_ingested_per_gb": Price(0.50, "CloudWatch Logs ingestion, per GB"),
    # Active tracing records about 5 % of requests with X-Ray's default sampling rule.
    "xray_trace_per_million": Price(5.00, "X-Ray traces recorded, per million", MILLION),
    "logs_stored_per_gb_month": Price(0.03, "CloudWatch Logs storage, per GB-month"),
    # PutMetricData (`takt worker` sends its metrics once a minute): $0.01 per 1,000 requests.
    "cloudwatch_put_metric_data_per_million": Price(
        10.00, "CloudWatch PutMetricData requests, per million", MILLION
    ),
    "cloudwatch_alarm_metric_month": Price(
        0.10, "CloudWatch standard alarm, per metric it reads, per month"
    ),
    "cloudwatch_dashboard_month": Price(3.00, "CloudWatch dashboard, per month"),
    "cloudwatch_custom_metric_month": Price(
        0.30, "CloudWatch custom metric, per month (first 10,000)"
    ),
    "kms_key_month": Price(1.00, "KMS customer managed key, per month"),
    "eventbridge_scheduler_per_million": Price(
        1.00, "EventBridge Scheduler invocations, per million", MILLION
    ),
    "step_functions_per_thousand_transitions": Price(
        0.025, "Step Functions Standard state transitions, per thousand", 1e3
    ),
    # Step Functions Express: per request, and per GB-second in 64 MB steps (the first tier).
    "step_functions_express_per_million": Price(
        1.00, "Step Functions Express requests, per million", MILLION
    ),
    "step_functions_express_gb_second": Price(
        0.00001667, "Step Functions Express duration, per GB-second"
    ),
    # The Fargate worker's VPC has one NAT gateway: by the hour and by the GB it carries.
    "nat_gateway_hour": Price(0.045, "NAT gateway, per hour"),
    "nat_gateway_per_gb": Price(0.045, "NAT gateway, per GB processed"),
    # Every public IPv4 address, in use or idle, since 2024-02-01 (Amazon VPC pricing, "Public
    # IPv4 Address"): a task's auto-assigned one as much as a NAT gateway's Elastic IP. The
    # Fargate worker's tasks each have one with `fargateEgress` publicIp.
    "public_ipv4_hour": Price(0.005, "public IPv4 address, per hour"),
    # Fargate, Linux on arm64 (Graviton), what the worker service runs on.
    "fargate_vcpu_hour": Price(0.03238, "Fargate Linux/ARM, per vCPU-hour"),
    "fargate_gb_hour": Price(0.00356, "Fargate Linux/ARM, per GB-hour"),
    # What a global table's replication moves between regions (the general rate out of
    # us-east-1; a few region pairs are cheaper).
    "data_transfer_inter_region_per_gb": Price(
        0.02, "data transfer from us-east-1 to another region, per GB"
    ),
}


@dataclass(frozen=True)
class Prices:
    """The table's `listed` figures by name, for arithmetic that reads them as fields (a price
    per million is the USD for a million, a price per hour the USD for an hour). Built from
    `LIST_PRICES` only, so a name missing from either side fails at import."""

    dynamodb_write_unit_per_million: float
    dynamodb_read_unit_per_million: float
    dynamodb_storage_gb_month: float
    dynamodb_write_capacity_unit_hour: float
    dynamodb_read_capacity_unit_hour: float
    sqs_request_per_million: float
    lambda_request_per_million: float
    lambda_gb_second: float
    api_gateway_http_per_million: float
    logs_ingested_per_gb: float
    xray_trace_per_million: float
    logs_stored_per_gb_month: float
    cloudwatch_put_metric_data_per_million: float
    cloudwatch_alarm_metric_month: float
    cloudwatch_dashboard_month: float
    cloudwatch_custom_metric_month: float
    kms_key_month: float
    eventbridge_scheduler_per_million: float
    step_functions_per_thousand_transitions: float
    step_functions_express_per_million: float
    step_functions_express_gb_second: float
    nat_gateway_hour: float
    nat_gateway_per_gb: float
    public_ipv4_hour: float
    fargate_vcpu_hour: float
    fargate_gb_hour: float
    data_transfer_inter_region_per_gb: float


US_EAST_1 = Prices(**{name: price.listed for name, price in LIST_PRICES.items()})
