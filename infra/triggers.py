"""What starts the functions: one-minute schedules for the loops, the lanes for the worker."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from cdk_nag import NagPackSuppression, NagSuppressions
from constructs import Construct

from infra.context import DeployConfig
from infra.driver import SchedulerDriver
from infra.functions import TaktFunctions
from infra.lanes import Lanes
from infra.tables import Tables
from takt.resources import JOBS

# The indexer's batches from the jobs table's stream, and how often a failing batch is retried
# (halved each time) before its first record goes to the failure queue.
INDEXER_BATCH_SIZE = 100
INDEXER_RETRIES = 10


class Triggers(Construct):
    """EventBridge rules for the scheduler (`infra.driver`) and the watchdog, SQS event sources for
    the worker on every lane the Fargate worker does not serve.

    EventBridge fires at most once a minute, so the watchdog runs for about a minute per
    invocation and sweeps inside it; the scheduler's drivers live longer and overlap. A delivery
    that EventBridge cannot make within a minute is dropped: the next minute's invocation does
    the same work.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: TaktFunctions,
        lanes: Lanes,
        config: DeployConfig,
        tables: Tables,
    ) -> None:
        super().__init__(scope, construct_id)
        self.index_failures = self._indexer(functions.indexer, tables)
        SchedulerDriver(self, "SchedulerDriver", scheduler=functions.scheduler)
        events.Rule(
            self,
            "WatchdogEveryMinute",
            description="Starts takt's watchdog loop once a minute",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[
                targets.LambdaFunction(
                    functions.watchdog,
                    max_event_age=Duration.minutes(1),
                    # The handler's number of sweeps an invocation (six unless a profile says).
                    event=events.RuleTargetInput.from_object({"sweeps": config.watchdog_sweeps}),
                )
            ],
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
                    batch_size=tuning.batch_size,
                    max_batching_window=Duration.seconds(tuning.batching_window_sec),
                    max_concurrency=tuning.max_concurrency,
                    # Without this one failed message returns the whole batch to the lane.
                    report_batch_item_failures=True,
                )
            )

    def _indexer(self, indexer: lambda_.Function, tables: Tables) -> sqs.Queue:
        """The jobs table's stream to the indexer, with a queue for the records it cannot index.

        Records are read from the oldest kept (TRIM_HORIZON), so an indexer deployed after the
        table indexes every change still in the stream. A batch that fails is split in two and
        retried, and the function reports the first record that failed, so the others are not
        redone and each job's changes stay in order; a record still failing after the retries
        is described in the failure queue (shard and sequence numbers, not the job), which the
        `IndexFailures` alarm watches.
        """
        failures = sqs.Queue(
            self,
            "IndexFailures",
            retention_period=Duration.days(14),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        NagSuppressions.add_resource_suppressions(
            failures,
            [
                NagPackSuppression(
                    id="AwsSolutions-SQS3",
                    reason=(
                        "This queue is itself a failure destination: it receives the "
                        "descriptions of stream records the indexer could not index, for an "
                        "operator, and nothing consumes it."
                    ),
                )
            ],
        )
        indexer.add_event_source(
            sources.DynamoEventSource(
                tables.table(JOBS),
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=INDEXER_BATCH_SIZE,
                bisect_batch_on_error=True,
                retry_attempts=INDEXER_RETRIES,
                report_batch_item_failures=True,
                on_failure=sources.SqsDlq(failures),
            )
        )
        return failures
