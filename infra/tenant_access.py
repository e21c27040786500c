"""Tenant isolation in IAM: DynamoDB's `dynamodb:LeadingKeys` condition on the tables whose keys
start with the tenant.

The jobs and tenants tables are keyed by `tenant_id`; the executions table by `<tenant>#<job>`
(and its `attention` index by `<tenant>#<state>#<shard>`); the idempotency table by
`<tenant>#<key>`. So "only this tenant's items" is one condition on every request's partition
keys: each is the tenant, or starts with `<tenant>#` (`ForAllValues:StringLike`). The due index,
keyed by (minute bucket, shard), cannot be confined this way and is reached only by the
scheduler's functions.

The API function serves every tenant, and learns which one per request, so its own role cannot
carry a fixed tenant. `TenantDataRole` is the role a per-request session takes: the API function
may assume it only with a `tenant` session tag, and the role's data access is conditioned on
`${aws:PrincipalTag/tenant}`, so a session for one tenant cannot touch another's items whatever
the code does (docs/SECURITY.md describes the session). Neither role may `Scan`.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from cdk_nag import NagPackSuppression, NagSuppressions, RegexAppliesTo
from constructs import Construct

from infra.tables import Tables, global_table_name
from takt.resources import EXECUTIONS, IDEMPOTENCY, JOBS, TENANTS, TableSpec

# The tables the API reads and writes, every key of which starts with the tenant.
TENANT_TABLES: tuple[TableSpec, ...] = (JOBS, EXECUTIONS, IDEMPOTENCY, TENANTS)
# Across regions, what a change to an existing job reads and writes in the lease holder's
# replica (takt.api.holder): the job, and the tenant's name claims, counts and calendars.
HOLDER_TABLES: tuple[TableSpec, ...] = (JOBS, TENANTS)
TENANT_TAG = "tenant"
# What the API does to items: single items, batches, queries of one partition. Never Scan.
ITEM_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
)


TableList = list[tuple[TableSpec, dynamodb.ITable]]


def table_resources(tables: TableList) -> list[str]:
    """The tables' ARNs, and their indexes' where they have any (queries of the executions
    table's `attention` index are keyed by the tenant too)."""
    arns = []
    for spec, table in tables:
        arns.append(table.table_arn)
        if spec.indexes:
            arns.append(f"{table.table_arn}/index/*")
    return arns


def leading_keys_access(tables: TableList, tenant: str) -> iam.PolicyStatement:
    """Item-level access to `tables` limited to items whose partition key is `tenant` or starts
    with `<tenant>#`; `tenant` may be a policy variable (`${aws:PrincipalTag/tenant}`)."""
    return iam.PolicyStatement(
        actions=list(ITEM_ACTIONS),
        resources=table_resources(tables),
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [tenant, f"{tenant}#*"]}},
    )


class TenantDataRole(Construct):
    """The role a per-tenant session of the API function takes, tagged with its tenant."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        tables: Tables,
        api_role: iam.IRole,
        other_regions: tuple[str, ...] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        tagged = f"${{aws:PrincipalTag/{TENANT_TAG}}}"
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ArnPrincipal(api_role.role_arn).with_conditions(
                {"StringLike": {f"aws:RequestTag/{TENANT_TAG}": "?*"}}
            ),
            description="takt API: one tenant's items, as a session tagged with the tenant",
            max_session_duration=Duration.hours(1),
        )
        # The trust policy's principal must also be allowed to tag the session it opens.
        assert self.role.assume_role_policy is not None
        self.role.assume_role_policy.add_statements(
            iam.PolicyStatement(
                actions=["sts:TagSession"],
                principals=[iam.ArnPrincipal(api_role.role_arn)],
                conditions={"StringLike": {f"aws:RequestTag/{TENANT_TAG}": "?*"}},
            )
        )
        self.role.add_to_policy(
            leading_keys_access([(spec, tables.table(spec)) for spec in TENANT_TABLES], tagged)
        )
        if other_regions:
            self.role.add_to_policy(_holder_replicas_access(self, other_regions, tagged))
        NagSuppressions.add_resource_suppressions(
            self.role,
            [
                NagPackSuppression(
                    id="AwsSolutions-IAM5",
                    reason=(
                        "DynamoDB grants cover a table's indexes as '<table>/index/*'; every "
                        "request is confined to the session's tenant by dynamodb:LeadingKeys."
                    ),
                    applies_to=[RegexAppliesTo(regex="/^Resource::.*\\/index\\/\\*$/g")],
                )
            ],
            apply_to_children=True,
        )
        iam.Grant.add_to_principal(
            grantee=api_role,
            actions=["sts:AssumeRole", "sts:TagSession"],
            resource_arns=[self.role.role_arn],
        )


def _holder_replicas_access(
    scope: Construct, regions: tuple[str, ...], tenant: str
) -> iam.PolicyStatement:
    """The tenant's items in `HOLDER_TABLES`' replicas in the other `regions` (not their indexes:
    the change reads and writes items by key), by name (a global table's is the same in every
    region): across regions the API writes a change to an existing
    job in the lease holder's replica (docs/ARCHITECTURE.md, "Regions")."""
    stack = Stack.of(scope)
    arns = [
        stack.format_arn(
            service="dynamodb",
            region=region,
            resource="table",
            resource_name=global_table_name(spec),
        )
        for region in regions
        for spec in HOLDER_TABLES
    ]
    return iam.PolicyStatement(
        actions=list(ITEM_ACTIONS),
        resources=arns,
        conditions={"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [tenant, f"{tenant}#*"]}},
    )
