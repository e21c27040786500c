"""The stateful stack builds exactly the tables and lanes `takt.resources` specifies, and keeps
them safe: encrypted, recoverable, retained, TLS only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template
from constructs import IConstruct

from infra.stateful import StatefulStack
from takt.resources import DUE, QUEUES, TABLES, QueueSpec, TableSpec
from takt.store.due import EXPIRES
from tests.infra.conftest import LogicalId

Find = Callable[[IConstruct], dict[str, Any]]


@pytest.fixture(scope="module")
def find(
    stateful: StatefulStack,
    stateful_template: Template,
    logical_id: Callable[[StatefulStack, IConstruct], str],
) -> Find:
    """The template resource an L2 construct of the stateful stack became."""
    resources = stateful_template.to_json()["Resources"]

    def resource(construct: IConstruct) -> dict[str, Any]:
        found: dict[str, Any] = resources[logical_id(stateful, construct)]
        return found

    return resource


@pytest.mark.parametrize("spec", TABLES, ids=lambda spec: spec.logical_id)
def test_table_has_the_keys_and_indexes_the_local_runtime_creates(
    spec: TableSpec, stateful: StatefulStack, find: Find
) -> None:
    properties = find(stateful.tables.table(spec))["Properties"]
    local = spec.create_table_kwargs("any")

    assert properties["KeySchema"] == local["KeySchema"]
    assert sorted(properties["AttributeDefinitions"], key=str) == sorted(
        local["AttributeDefinitions"], key=str
    )
    # The seed's tables are provisioned (tests/infra/test_infra_billing.py): each index has its
    # capacity beside what the local runtime creates.
    indexes = [
        {k: v for k, v in index.items() if k != "ProvisionedThroughput"}
        for index in properties.get("GlobalSecondaryIndexes", [])
    ]
    assert indexes == local.get("GlobalSecondaryIndexes", [])


@pytest.mark.parametrize("spec", TABLES, ids=lambda spec: spec.logical_id)
def test_table_ttl_follows_the_spec(spec: TableSpec, stateful: StatefulStack, find: Find) -> None:
    properties = find(stateful.tables.table(spec))["Properties"]

    if spec.ttl_attribute:
        assert properties["TimeToLiveSpecification"] == {
            "AttributeName": spec.ttl_attribute,
            "Enabled": True,
        }
    else:
        assert "TimeToLiveSpecification" not in properties


def test_the_due_table_expires_the_minutes_counts_on_the_attribute_their_expiry_writes(
    stateful: StatefulStack, find: Find
) -> None:
    properties = find(stateful.tables.table(DUE))["Properties"]

    assert properties["TimeToLiveSpecification"] == {"AttributeName": EXPIRES, "Enabled": True}, (
        "the hot minute split: a minute's count item is deleted by the due table's time to live "
        "once the watermark passed it (takt.store.due.expire_count), not kept for ever"
    )


@pytest.mark.parametrize("spec", TABLES, ids=lambda spec: spec.logical_id)
def test_table_is_encrypted_recoverable_and_retained(
    spec: TableSpec, stateful: StatefulStack, find: Find
) -> None:
    resource = find(stateful.tables.table(spec))
    properties = resource["Properties"]

    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert properties["SSESpecification"]["SSEEnabled"] is True
    assert properties["DeletionProtectionEnabled"] is True
    assert resource["DeletionPolicy"] == "Retain"
    assert resource["UpdateReplacePolicy"] == "Retain"


def test_tables_have_no_physical_names(stateful_template: Template) -> None:
    tables = stateful_template.find_resources("AWS::DynamoDB::Table")

    assert len(tables) == len(TABLES)
    assert all("TableName" not in table["Properties"] for table in tables.values())


def test_there_is_one_queue_and_one_dead_letter_queue_per_lane(
    stateful_template: Template,
) -> None:
    queues = stateful_template.find_resources("AWS::SQS::Queue")

    assert len(queues) == 2 * len(QUEUES)
    assert all("QueueName" not in queue.get("Properties", {}) for queue in queues.values())


@pytest.mark.parametrize("spec", QUEUES, ids=lambda spec: spec.lane)
def test_lane_redrives_to_a_dlq_that_outlives_it(
    spec: QueueSpec,
    stateful: StatefulStack,
    find: Find,
    logical_id: Callable[[StatefulStack, IConstruct], str],
) -> None:
    lane = stateful.lanes.lanes[spec.lane]
    queue = find(lane.queue)["Properties"]
    dlq = find(lane.dlq)["Properties"]
    dlq_id = logical_id(stateful, lane.dlq)

    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
        "maxReceiveCount": spec.max_receive_count,
    }
    assert spec.max_receive_count >= 5
    assert queue["VisibilityTimeout"] == spec.visibility_timeout_sec
    assert queue["MessageRetentionPeriod"] == spec.retention_sec
    assert dlq["MessageRetentionPeriod"] == spec.dlq_retention_sec
    assert dlq["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]


@pytest.mark.parametrize("spec", QUEUES, ids=lambda spec: spec.lane)
def test_lane_and_dlq_are_encrypted_and_tls_only(
    spec: QueueSpec,
    stateful: StatefulStack,
    stateful_template: Template,
    find: Find,
    logical_id: Callable[[StatefulStack, IConstruct], str],
) -> None:
    lane = stateful.lanes.lanes[spec.lane]
    for queue in (lane.queue, lane.dlq):
        assert find(queue)["Properties"]["SqsManagedSseEnabled"] is True
        stateful_template.has_resource_properties(
            "AWS::SQS::QueuePolicy",
            {
                "Queues": [{"Ref": logical_id(stateful, queue)}],
                "PolicyDocument": {
                    "Statement": Match.array_with(
                        [
                            Match.object_like(
                                {
                                    "Effect": "Deny",
                                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                }
                            )
                        ]
                    )
                },
            },
        )


def _account_alarms_condition() -> dict[str, Any]:
    """The condition that limits CloudWatch to this account's alarms, as the template holds it."""
    return {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
        "ArnLike": {
            "aws:SourceArn": {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":cloudwatch:",
                        {"Ref": "AWS::Region"},
                        ":",
                        {"Ref": "AWS::AccountId"},
                        ":alarm:*",
                    ],
                ]
            }
        },
    }


def test_alarm_topic_is_encrypted_with_a_rotated_key_cloudwatch_may_use(
    stateful_template: Template,
) -> None:
    stateful_template.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": Match.object_like({"Fn::GetAtt": Match.any_value()})}
    )
    stateful_template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        {
                            "Sid": "AlarmsOfThisAccountEncrypt",
                            "Effect": "Allow",
                            "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                            "Resource": "*",
                            "Condition": _account_alarms_condition(),
                        }
                    ]
                )
            },
        },
    )


def test_alarm_topic_policy_lets_this_accounts_alarms_publish(
    stateful_template: Template, stateful: StatefulStack, logical_id: LogicalId
) -> None:
    """`enforce_ssl` replaces SNS's default policy, so without this Allow no alarm ever arrives."""
    topic = logical_id(stateful, stateful.alarm_topic)
    policies = stateful_template.find_resources("AWS::SNS::TopicPolicy")
    statements = [
        statement
        for policy in policies.values()
        if {"Ref": topic} in policy["Properties"]["Topics"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]

    allows = [statement for statement in statements if statement["Effect"] == "Allow"]
    assert allows == [
        {
            "Sid": "AlarmsOfThisAccountPublish",
            "Effect": "Allow",
            "Principal": {"Service": "cloudwatch.amazonaws.com"},
            "Action": "sns:Publish",
            "Resource": {"Ref": topic},
            "Condition": _account_alarms_condition(),
        }
    ]
    assert any(statement["Effect"] == "Deny" for statement in statements)


def test_stateful_stack_is_termination_protected(stateful: StatefulStack) -> None:
    assert stateful.termination_protection is True


# What CloudFormation knows each stateful resource by. A changed logical id makes CloudFormation
# create a new resource and drop the old one: a new, empty table or queue, with the retained old
# one orphaned beside it. Construct ids must therefore never change; if this test fails, the
# change is a data migration, not a refactoring. (`Lanes/Default` is the default child of its
# construct, which is why the default lane's id has no "Default" in it.)
PINNED_LOGICAL_IDS = {
    "table Jobs": "TablesJobs313634AE",
    "table Due": "TablesDue208590C7",
    "table Executions": "TablesExecutions3D4D6FCD",
    "table Idempotency": "TablesIdempotency498FF680",
    "table Tenants": "TablesTenantsE95A5149",
    "lane high": "LanesHigh76CF11C1",
    "lane high DLQ": "LanesHighDlqE7B01253",
    "lane default": "LanesECC43FAD",
    "lane default DLQ": "LanesDefaultDlqB352F294",
    "lane low": "LanesLowFD842760",
    "lane low DLQ": "LanesLowDlq2CCC8289",
    "alarm topic": "AlarmTopicD01E77F9",
    "alarm topic key": "AlarmTopicKey57B0D3A7",
}


def test_stateful_resources_keep_their_logical_ids(
    stateful: StatefulStack, logical_id: Callable[[StatefulStack, IConstruct], str]
) -> None:
    constructs: dict[str, IConstruct] = {
        f"table {spec.logical_id}": stateful.tables.table(spec) for spec in TABLES
    }
    for lane, pair in stateful.lanes.lanes.items():
        constructs[f"lane {lane}"] = pair.queue
        constructs[f"lane {lane} DLQ"] = pair.dlq
    key = stateful.alarm_topic.master_key
    assert key is not None
    constructs["alarm topic"] = stateful.alarm_topic
    constructs["alarm topic key"] = key

    assert {name: logical_id(stateful, c) for name, c in constructs.items()} == PINNED_LOGICAL_IDS


def test_every_stateful_resource_is_pinned(stateful_template: Template) -> None:
    stateful_types = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::SNS::Topic", "AWS::KMS::Key")
    found = {
        logical_id
        for logical_id, resource in stateful_template.to_json()["Resources"].items()
        if resource["Type"] in stateful_types
    }

    assert found == set(PINNED_LOGICAL_IDS.values())
