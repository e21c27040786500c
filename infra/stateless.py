"""The stateless stack: the code and everything that only points at data.

Everything here can be destroyed and redeployed without losing a job: the layer, the functions,
the API, the schedules, the dashboard and the alarms.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Fn, Stack
from constructs import Construct

from infra.api import JobApi
from infra.context import DeployConfig
from infra.functions import TaktFunctions
from infra.layer import takt_layer
from infra.observability import Observability
from infra.stateful import StatefulStack
from infra.triggers import Triggers
from infra.worker_service import FargateWorker


class StatelessStack(Stack):
    """Layer, functions, HTTP API, EventBridge rules, dashboard and alarms, and the Fargate worker
    when `fargateWorker` is on."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stateful: StatefulStack,
        config: DeployConfig,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.functions = TaktFunctions(
            self,
            "Functions",
            layer=takt_layer(self, "TaktLayer"),
            tables=stateful.tables,
            lanes=stateful.lanes,
            config=config,
        )
        triggers = Triggers(
            self,
            "Triggers",
            functions=self.functions,
            lanes=stateful.lanes,
            config=config,
            tables=stateful.tables,
        )
        self.api = JobApi(self, "Api", handler=self.functions.api, config=config)
        self.fargate_worker = (
            FargateWorker(
                self,
                "FargateWorker",
                tables=stateful.tables,
                lanes=stateful.lanes,
                environment=self.functions.environment,
                config=config,
                worker=config.fargate,
                watchdog=self.functions.watchdog,
            )
            if config.fargate
            else None
        )
        Observability(
            self,
            "Observability",
            functions=self.functions,
            tables=stateful.tables,
            lanes=stateful.lanes,
            alarm_topic=stateful.alarm_topic,
            config=config,
            index_failures=triggers.index_failures,
            fargate_worker=self.fargate_worker,
        )
        CfnOutput(self, "ApiUrl", value=self.api.stage.url, description="takt job API endpoint")

    @property
    def availability_zones(self) -> list[str]:
        """The region's first two zones, chosen by CloudFormation at deploy time (Fn::GetAZs).

        A stack bound to an account asks the CDK CLI to look its zones up at synth, which needs
        credentials: `cdk synth -c fargateWorker=true` would fail without them, and succeed with
        them only by writing cdk.context.json. The Fargate worker's VPC spans two zones
        (`max_azs=2`) and any two serve it, so the template names them by index instead.
        """
        return [Fn.select(index, Fn.get_azs()) for index in range(2)]
