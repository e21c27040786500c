"""What starts the functions: a one-minute schedule for the loops, the lanes for the worker."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda_event_sources as sources
from constructs import Construct

from infra.context import DeployConfig
from infra.functions import TaktFunctions
from infra.lanes import Lanes

# SQS's largest receive; the worker reports failures per message, so a big batch costs no retries.
WORKER_BATCH_SIZE = 10


class Triggers(Construct):
    """EventBridge rules for the scheduler and the watchdog, SQS event sources for the worker on
    every lane the Fargate worker does not serve.

    EventBridge fires at most once a minute, so the scheduler and the watchdog each run for about
    a minute per invocation and tick inside it. A delivery that EventBridge cannot make within a
    minute is dropped: the next minute's invocation does the same work.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: TaktFunctions,
        lanes: Lanes,
        config: DeployConfig,
    ) -> None:
        super().__init__(scope, construct_id)
        for name, function in (
            ("Scheduler", functions.scheduler),
            ("Watchdog", functions.watchdog),
        ):
            events.Rule(
                self,
                f"{name}EveryMinute",
                description=f"Starts takt's {name.lower()} loop once a minute",
                schedule=events.Schedule.rate(Duration.minutes(1)),
                targets=[targets.LambdaFunction(function, max_event_age=Duration.minutes(1))],
            )
        fargate_lanes = config.fargate.lanes if config.fargate else ()
        for lane, pair in lanes.lanes.items():
            if lane in fargate_lanes:
                # The Fargate worker is this lane's only consumer: a run longer than the
                # function's timeout would fail here every time it was delivered here.
                continue
            tuning = config.lanes[lane]
            functions.worker.add_event_source(
                sources.SqsEventSource(
                    pair.queue,
                    batch_size=WORKER_BATCH_SIZE,
                    max_batching_window=Duration.seconds(tuning.batching_window_sec),
                    max_concurrency=tuning.max_concurrency,
                    # Without this one failed message returns the whole batch to the lane.
                    report_batch_item_failures=True,
                )
            )
