"""The stateful stack: what holds data and must outlive any deployment of the code.

Kept apart from the functions so that a code deployment can never replace a table or a queue, and
so that this stack can carry termination protection while the stateless one is freely redeployed.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import ArnFormat, CfnOutput, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.context import DeployConfig
from infra.lanes import Lanes
from infra.tables import Tables


class StatefulStack(Stack):
    """Tables, lanes and the alarm topic."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, termination_protection=True, **kwargs)
        self.tables = Tables(self, "Tables", billing=config.table_billing, regions=config.regions)
        self.lanes = Lanes(self, "Lanes")

        # A customer managed key, because CloudWatch alarms cannot publish to a topic encrypted
        # with the AWS managed `aws/sns` key: its policy cannot be changed to let them in.
        alarm_key = kms.Key(
            self,
            "AlarmTopicKey",
            description="Encrypts takt's alarm notifications at rest",
            enable_key_rotation=True,
        )
        alarm_key.add_to_resource_policy(
            self._from_account_alarms(
                sid="AlarmsOfThisAccountEncrypt",
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
            )
        )
        self.alarm_topic = sns.Topic(self, "AlarmTopic", master_key=alarm_key, enforce_ssl=True)
        # `enforce_ssl` gives the topic a policy holding only a Deny, which replaces SNS's default
        # policy: without this Allow no alarm could publish and no notification would arrive.
        self.alarm_topic.add_to_resource_policy(
            self._from_account_alarms(
                sid="AlarmsOfThisAccountPublish",
                actions=["sns:Publish"],
                resources=[self.alarm_topic.topic_arn],
            )
        )
        if config.alarm_email:
            self.alarm_topic.add_subscription(subscriptions.EmailSubscription(config.alarm_email))
        CfnOutput(
            self,
            "AlarmTopicArn",
            value=self.alarm_topic.topic_arn,
            description="Subscribe to this SNS topic for takt's alarms",
        )

    def _from_account_alarms(
        self, *, sid: str, actions: list[str], resources: list[str]
    ) -> iam.PolicyStatement:
        """An Allow for CloudWatch acting for this account's alarms, and no other account's.

        CloudWatch sets aws:SourceAccount and aws:SourceArn (the alarm's ARN) when it publishes,
        so the conditions keep another account's alarms from using the service principal here.
        """
        return iam.PolicyStatement(
            sid=sid,
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=actions,
            resources=resources,
            conditions={
                "StringEquals": {"aws:SourceAccount": self.account},
                "ArnLike": {
                    "aws:SourceArn": self.format_arn(
                        service="cloudwatch",
                        resource="alarm",
                        resource_name="*",
                        arn_format=ArnFormat.COLON_RESOURCE_NAME,
                    )
                },
            },
        )
