"""A deployment across regions (`-c regions=...`): MREC data tables, the MRSC lease table, and the
stateless stack in every region pointing at the same tables (docs/DEPLOY.md, "Regions").

The templates are the `regions` variant's, synthesized as the CDK CLI runs it (cli_synth.py),
which test_infra_cli_synth.py also lints: one synthesis serves both files.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack
from aws_cdk.assertions import Template

from infra.context import ContextError, DeployConfig
from infra.regions import RegionPlan
from infra.stateful import StatefulStack
from infra.stateless import StatelessStack
from infra.tables import Tables
from takt.resources import TABLES
from takt_cli.capacity.idle import MINUTES_PER_MONTH, base_lines, render
from takt_cli.capacity.model import CallProfile
from takt_cli.capacity.regions import (
    busy_processes,
    idle_region_lines,
    lease_lines,
    regional_stacks,
    regions_price_table,
    seed_load_lines,
)
from takt_cli.commands.main import main
from tests.infra.cli_synth import REGIONS_CONTEXT

PRIMARY, SECOND, WITNESS = "us-east-1", "us-east-2", "us-west-2"
DATA_TABLES = {
    "TAKT_JOBS_TABLE": "takt-jobs",
    "TAKT_DUE_TABLE": "takt-due",
    "TAKT_EXECUTIONS_TABLE": "takt-executions",
    "TAKT_IDEMPOTENCY_TABLE": "takt-idempotency",
    "TAKT_TENANTS_TABLE": "takt-tenants",
}


@pytest.fixture(scope="module")
def assembly(cli_assemblies: Callable[[str], Path]) -> Path:
    return cli_assemblies("regions")


def _template(assembly: Path, stack: str, region: str) -> dict[str, Any]:
    template: dict[str, Any] = json.loads(
        (assembly / f"{stack}-{region}.template.json").read_text()
    )
    return template


def _resources(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == kind
    }


def _environments(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: function["Properties"]["Environment"]["Variables"]
        for name, function in _resources(template, "AWS::Lambda::Function").items()
        if name.startswith("Functions")
    }


def _config(context: dict[str, Any], **overrides: Any) -> DeployConfig:
    """The context as cdk.json and `-c` give it: the profile's own billing, record at the
    lease and claim cursor are not the user's (`-c tableBilling=provisioned`,
    `-c recordAtLease=true` or `-c dueCursor=true` with `regions` is refused; the seed's are set
    aside)."""
    given = {k: v for k, v in context.items() if k not in PROFILE_SET_ASIDE} | overrides
    return DeployConfig.from_context(App(context=given).node)


# The seed profile's table billing, record at the lease and claim cursor, which a deployment
# across regions sets aside.
PROFILE_SET_ASIDE = ("tableBilling", "tableCapacity", "recordAtLease", "dueCursor")


def _single_region_tables(stateful: StatefulStack) -> dict[str, dict[str, Any]]:
    """The one-region stack's tables by the name of their spec's setting (`jobs_table`, ...)."""
    resources = Template.from_stack(stateful).to_json()["Resources"]
    return {
        spec.setting: next(
            resource
            for name, resource in resources.items()
            if name.startswith(f"Tables{spec.logical_id}")
        )
        for spec in TABLES
    }


def test_single_region_tables_synthesize_as_before_regions(
    stacks: tuple[StatefulStack, StatelessStack],
) -> None:
    """One region keeps its regional tables, named by CloudFormation, and no lease at all."""
    stateful, stateless = stacks
    resources = Template.from_stack(stateful).to_json()["Resources"]
    tables = _single_region_tables(stateful)
    environments = [
        resource["Properties"]["Environment"]["Variables"]
        for resource in Template.from_stack(stateless).to_json()["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
        and "Environment" in resource.get("Properties", {})
    ]

    assert {resource["Type"] for resource in resources.values()} >= {"AWS::DynamoDB::Table"}
    assert not {"AWS::DynamoDB::GlobalTable", "Custom::AWS"} & {
        resource["Type"] for resource in resources.values()
    }, "one region builds no global table and looks no stream up"
    for setting, table in tables.items():
        properties = table["Properties"]
        assert table["Type"] == "AWS::DynamoDB::Table", setting
        assert "TableName" not in properties, f"{setting}: CloudFormation names it, as before"
        assert (table["DeletionPolicy"], properties["DeletionProtectionEnabled"]) == (
            "Retain",
            True,
        ), setting
    assert all(
        "TAKT_REGIONS" not in env and "TAKT_REGION_LEASE_TABLE" not in env for env in environments
    ), "one region sets no region lease: the fence stays off"


def test_regions_deploy_a_stack_pair_per_region_each_in_its_region(assembly: Path) -> None:
    manifest = json.loads((assembly / "manifest.json").read_text())
    environments = {
        name: artifact["environment"]
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }

    assert environments == {
        f"{stack}-{region}": f"aws://123456789012/{region}"
        for stack in ("TaktStateful", "TaktStateless")
        for region in (PRIMARY, SECOND)
    }, "each region's stacks deploy to that region"
    assert f"TaktStateful-{PRIMARY}" in manifest["artifacts"][f"TaktStateful-{SECOND}"].get(
        "dependencies", []
    ), "a replica region's stateful stack waits for the global tables that create its replica"


def test_regions_make_every_data_table_an_mrec_global_table_with_what_one_region_has(
    assembly: Path, stacks: tuple[StatefulStack, StatelessStack]
) -> None:
    single = _single_region_tables(stacks[0])
    tables = _resources(_template(assembly, "TaktStateful", PRIMARY), "AWS::DynamoDB::GlobalTable")
    data = {
        table["Properties"]["TableName"]: table["Properties"]
        for table in tables.values()
        if table["Properties"]["TableName"] != "takt-regions"
    }

    assert sorted(data) == sorted(DATA_TABLES.values())
    for spec in TABLES:
        name = DATA_TABLES[f"TAKT_{spec.setting.upper()}"]
        table, original = data[name], single[spec.setting]["Properties"]
        assert "MultiRegionConsistency" not in table, f"{name} must be MREC (eventual)"
        assert [replica["Region"] for replica in table["Replicas"]] == [SECOND, PRIMARY], (
            f"{name} needs a replica in every region"
        )
        assert all(
            replica["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]
            and replica["DeletionProtectionEnabled"]
            for replica in table["Replicas"]
        ), f"every replica of {name} keeps point-in-time recovery and deletion protection"
        assert table["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
        assert table["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
        for kept in ("TimeToLiveSpecification", "KeySchema"):
            assert table.get(kept) == original.get(kept), f"{name} keeps one region's {kept}"
        # The seed's one region is provisioned; global tables are on demand, the rest the same.
        indexes = [
            {k: v for k, v in index.items() if k != "ProvisionedThroughput"}
            for index in original.get("GlobalSecondaryIndexes", [])
        ]
        assert table.get("GlobalSecondaryIndexes", []) == indexes, f"{name} keeps its indexes"


def test_regions_hold_the_lease_in_an_mrsc_table_with_its_witness(assembly: Path) -> None:
    tables = _resources(_template(assembly, "TaktStateful", PRIMARY), "AWS::DynamoDB::GlobalTable")
    (lease,) = [
        table["Properties"]
        for table in tables.values()
        if table["Properties"]["TableName"] == "takt-regions"
    ]

    assert lease["MultiRegionConsistency"] == "STRONG", "the lease needs MRSC's compare-and-set"
    assert lease["GlobalTableWitnesses"] == [{"Region": WITNESS}]
    assert sorted(replica["Region"] for replica in lease["Replicas"]) == [PRIMARY, SECOND]
    assert lease["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert "TimeToLiveSpecification" not in lease and "LocalSecondaryIndexes" not in lease


def test_every_regions_stateless_stack_points_at_the_same_tables_and_lease(
    assembly: Path,
) -> None:
    for region in (PRIMARY, SECOND):
        environments = _environments(_template(assembly, "TaktStateless", region))
        assert len(environments) == 6
        for name, env in environments.items():
            assert {key: env[key] for key in DATA_TABLES} == DATA_TABLES, (
                f"{name} in {region} must read the global tables by their one name"
            )
            assert env["TAKT_REGION_LEASE_TABLE"] == "takt-regions", name
            assert json.loads(env["TAKT_REGIONS"]) == [PRIMARY, SECOND], (
                f"{name} in {region}: every region lists the regions, the first the holder"
            )
            assert env["TAKT_REGION"] == region, f"{name} must know its own region"


def _lease_actions(template: dict[str, Any], role: str) -> set[str]:
    actions: set[str] = set()
    for name, policy in _resources(template, "AWS::IAM::Policy").items():
        if not name.startswith(f"Functions{role}RoleDefaultPolicy"):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            # The lease table by name (a replica region) or by its output (the first region).
            resource = json.dumps(statement["Resource"])
            if "takt-regions" in resource or "TablesRegions" in resource:
                found = statement["Action"]
                actions |= {found} if isinstance(found, str) else set(found)
    return actions


@pytest.mark.parametrize("region", [PRIMARY, SECOND])
def test_every_acting_function_may_renew_the_lease_and_no_other_can_touch_it(
    assembly: Path, region: str
) -> None:
    """Each acting function proves its region holds the lease by a conditional renewal
    (takt.regions.fence); the API only reads which region holds it (takt.api.holder), and the
    indexer keeps each region's due index from its own replica's stream, unfenced."""
    template = _template(assembly, "TaktStateless", region)

    for role in ("Scheduler", "Claimer", "Worker", "Watchdog"):
        actions = _lease_actions(template, role)
        assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"} <= actions, (
            f"{role} in {region} must read, create and renew the region lease"
        )
    assert _lease_actions(template, "Api") == {"dynamodb:GetItem"}, (
        "least privilege: the API reads the lease's holder and may never write the lease"
    )
    assert _lease_actions(template, "Indexer") == set(), (
        "least privilege: the indexer does not act on the lease, so it may not touch it"
    )


@pytest.mark.parametrize(("region", "other"), [(PRIMARY, SECOND), (SECOND, PRIMARY)])
def test_the_tenant_data_role_reaches_the_jobs_and_tenants_replicas_of_the_other_region(
    assembly: Path, region: str, other: str
) -> None:
    """A change to an existing job is written in the lease holder's replica (takt.api.holder),
    through the tenant's session of the tenant-data role: that role reaches the jobs and tenants
    replicas in the other regions, still confined to the tenant's items."""
    template = _template(assembly, "TaktStateless", region)
    statements = [
        statement
        for name, policy in _resources(template, "AWS::IAM::Policy").items()
        if name.startswith("FunctionsTenantDataRole")
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    # CDK merges statements of the same actions and condition: judge each resource.
    elsewhere = [
        (statement, json.dumps(resource))
        for statement in statements
        for resource in statement["Resource"]
        if f":{other}:" in json.dumps(resource)
    ]

    reached = {resource.split("table/")[-1].strip('"]}') for _, resource in elsewhere}
    assert reached == {"takt-jobs", "takt-tenants"}, (
        f"changes to existing jobs are written in the holder's replica: {region} reaches "
        f"{other}'s jobs and tenants tables, and no other: {reached}"
    )
    for statement, _ in elsewhere:
        assert "dynamodb:UpdateItem" in statement["Action"]
        assert "dynamodb:Scan" not in statement["Action"]
        assert "dynamodb:LeadingKeys" in json.dumps(statement["Condition"]), (
            "the holder's replicas are reached only for the session's tenant's items"
        )


def test_a_replica_regions_indexer_reads_its_own_replicas_stream(assembly: Path) -> None:
    stateful = _template(assembly, "TaktStateful", SECOND)
    stateless = _template(assembly, "TaktStateless", SECOND)
    (lookup,) = _resources(stateful, "Custom::AWS").values()
    (mapping,) = [
        resource["Properties"]
        for name, resource in _resources(stateless, "AWS::Lambda::EventSourceMapping").items()
        if "Indexer" in name
    ]

    assert '"TableName":"takt-jobs"' in json.dumps(lookup["Properties"]["Create"]).replace(
        "\\", ""
    ).replace(" ", "")
    assert mapping["EventSourceArn"]["Fn::GetStackOutput"]["StackName"] == (
        f"TaktStateful-{SECOND}"
    ), "the indexer reads the stream of its region's replica, looked up at deployment"


def test_every_region_has_its_alarms_dashboard_and_replication_alarm(
    assembly: Path, cli_assemblies: Callable[[str], Path]
) -> None:
    single = json.loads((cli_assemblies("default") / "TaktStateless.template.json").read_text())
    expected = len(_resources(single, "AWS::CloudWatch::Alarm"))

    for region, other in ((PRIMARY, SECOND), (SECOND, PRIMARY)):
        template = _template(assembly, "TaktStateless", region)
        alarms = _resources(template, "AWS::CloudWatch::Alarm")
        (replication,) = [
            alarm["Properties"] for name, alarm in alarms.items() if "ReplicationLatency" in name
        ]
        receiving = {
            (dimension["Name"], dimension["Value"])
            for query in replication["Metrics"]
            if "MetricStat" in query
            for dimension in query["MetricStat"]["Metric"]["Dimensions"]
        }
        assert len(alarms) == expected + 1, (
            f"{region} must page on what one region pages on, and on replication latency"
        )
        assert receiving == {("ReceivingRegion", other)} | {
            ("TableName", name) for name in DATA_TABLES.values()
        }, f"{region} watches its writes' replication to {other}, for every data table"
        assert len(_resources(template, "AWS::CloudWatch::Dashboard")) == 1, region
        assert "ApiUrl" in template["Outputs"], f"{region}'s API endpoint is a stack output"
        alarm_topic = _template(assembly, "TaktStateful", region)
        assert len(_resources(alarm_topic, "AWS::SNS::Topic")) == 1, (
            f"{region}'s alarms publish to a topic in {region}"
        )


@pytest.mark.parametrize(
    ("regions", "witness", "error"),
    [
        ("us-east-1", None, "two or three regions"),
        ("us-east-1,us-east-1", "us-west-2", "twice"),
        ("us-east-1,us-east-2", None, "needs 'witnessRegion'"),
        ("us-east-1,us-east-2", "us-east-2", "must not be one of"),
        ("us-east-1,us-east-2,us-west-2", "us-west-2", "two regions only"),
        ("us-east-1,eu-west-1", "us-west-2", "one of MRSC's region sets"),
        ("us-east-1,us-east-2", "eu-west-1", "one of MRSC's region sets"),
        ("eu-west-1,eu-west-2,eu-west-3,eu-central-1", None, "at most 3"),
        ("", "us-west-2", "'witnessRegion' needs 'regions'"),
    ],
)
def test_regions_the_lease_table_cannot_span_are_refused_by_name(
    cdk_json_context: dict[str, Any], regions: str, witness: str | None, error: str
) -> None:
    overrides = {"regions": regions} | ({"witnessRegion": witness} if witness else {})

    with pytest.raises(ContextError, match=error):
        _config(cdk_json_context, **overrides)


def test_regions_bill_on_demand_only(cdk_json_context: dict[str, Any]) -> None:
    with pytest.raises(ContextError, match="tableBilling=provisioned' is for one region"):
        _config(cdk_json_context, tableBilling="provisioned", **REGIONS_CONTEXT)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"tableBilling": "reserved"}, "tableBilling"),
        (
            {"tableBilling": "provisioned", "tableCapacity": '{"history": {}}'},
            "tableCapacity.history",
        ),
    ],
)
def test_a_bad_billing_setting_across_regions_is_refused_by_name(
    cdk_json_context: dict[str, Any], overrides: dict[str, str], named: str
) -> None:
    """Bad input is refused whatever the regions: the profile's billing giving way to them must
    not skip the check of what the user set."""
    with pytest.raises(ContextError, match=f"'{named}'"):
        _config(cdk_json_context, **overrides, **REGIONS_CONTEXT)


def test_the_seed_profiles_provisioned_tables_give_way_to_regions(
    cdk_json_context: dict[str, Any],
) -> None:
    assert _config(cdk_json_context).table_billing is not None, "one region: the seed's billing"
    assert _config(cdk_json_context, **REGIONS_CONTEXT).table_billing is None, (
        "across regions the seed profile's provisioned tables give way to global tables' on demand"
    )


@pytest.mark.parametrize(
    ("regions", "witness"),
    [
        ("us-east-1,us-east-2", "us-west-2"),
        ("us-west-2,us-east-1,us-east-2", None),
        ("eu-west-1,eu-central-1", "eu-west-3"),
        ("ap-northeast-1,ap-northeast-3", "ap-northeast-2"),
    ],
)
def test_regions_within_one_region_set_are_planned_first_region_first(
    cdk_json_context: dict[str, Any], regions: str, witness: str | None
) -> None:
    overrides = {"regions": regions} | ({"witnessRegion": witness} if witness else {})

    plan = _config(cdk_json_context, **overrides).regions

    assert plan == RegionPlan(regions=tuple(regions.split(",")), witness=witness)
    assert plan is not None and plan.primary == regions.split(",", maxsplit=1)[0]


def test_each_further_region_costs_its_stacks_idle_and_the_lease(assembly: Path) -> None:
    stacks = regional_stacks(assembly)
    lines = {line.item.split(":")[0]: line for line in idle_region_lines(stacks)}
    second = stacks[1]
    renewals = lines["region lease renewals"]

    assert [stack.region for stack in stacks] == [PRIMARY, SECOND], "the first region first"
    assert lines[f"{SECOND}'s stacks idle, as one region's (an upper bound"].usd == pytest.approx(
        sum(line.usd for line in base_lines(second.stateful, second.stateless))
    ), "a standby region runs every loop one region runs"
    # Two live drivers and the watchdog renew every 5 s, a replicated write in both regions.
    assert renewals.usd == pytest.approx(3 * 12 * 2 * MINUTES_PER_MONTH * 0.625 / 1e6), (
        "replicated-writes-billed-in-every-region: a renewal is a write unit in each replica"
    )


def test_replicated_writes_at_the_seeds_load_are_billed_once_more_per_region() -> None:
    two, three = seed_load_lines(2, processes=10), seed_load_lines(3, processes=10)
    write_units = sum(CallProfile().write_units_by_table.values())

    assert two[0].usd == pytest.approx(1400 * MINUTES_PER_MONTH * 60 * write_units * 0.625 / 1e6)
    assert three[0].usd == pytest.approx(2 * two[0].usd), (
        "replicated-writes-billed-in-every-region: a third region bills every write once more"
    )
    assert three[1].usd == pytest.approx(2 * two[1].usd), "and moves its bytes once more"


def test_every_busy_process_renews_the_lease_at_load_in_every_replica(assembly: Path) -> None:
    """The seed's busy region: 4 drivers' and 384 claimers' reservations, the `high` lane's 50
    workers (its `default` and `low` lanes run on the Fargate worker) and the watchdog, each
    renewing every 5 s, a write in each replica."""
    processes = busy_processes(_template(assembly, "TaktStateless", PRIMARY))
    renewals = seed_load_lines(2, processes)[2]

    assert processes == 4 + 384 + 50 + 1
    assert renewals.usd == pytest.approx(processes * 12 * 2 * MINUTES_PER_MONTH * 0.625 / 1e6), (
        "replicated-writes-billed-in-every-region: each renewal is a write in both replicas"
    )


def test_takt_cost_idle_prices_every_region_of_a_regions_synth(
    assembly: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["cost", "idle", str(assembly)])

    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"{PRIMARY} (the first region, holding the lease):")
    assert render(idle_region_lines(regional_stacks(assembly))) in out
    assert (
        render(seed_load_lines(2, busy_processes(_template(assembly, "TaktStateless", PRIMARY))))
        in out
    )


def test_deploy_doc_shows_what_the_regions_cost(assembly: Path) -> None:
    deploy = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text()

    assert render(lease_lines(regional_stacks(assembly))) in deploy, (
        "docs/DEPLOY.md's regions cost is takt cost idle's: regenerate it"
    )
    assert (
        render(seed_load_lines(2, busy_processes(_template(assembly, "TaktStateless", PRIMARY))))
        in deploy
    ), "docs/DEPLOY.md's cost at the seed's load is takt cost idle's: regenerate it"
    assert regions_price_table() in deploy


def test_three_regions_hold_the_lease_in_three_replicas_without_a_witness() -> None:
    """Three regions are MRSC's three replicas; the data tables replicate to the other two."""
    plan = RegionPlan(regions=("us-west-2", PRIMARY, SECOND))
    stack = Stack(App(), "Three", env=Environment(account="123456789012", region="us-west-2"))
    Tables(stack, "Tables", regions=plan)
    tables = {
        table["Properties"]["TableName"]: table["Properties"]
        for table in _resources(
            Template.from_stack(stack).to_json(), "AWS::DynamoDB::GlobalTable"
        ).values()
    }

    lease = tables.pop("takt-regions")
    assert lease["MultiRegionConsistency"] == "STRONG"
    assert "GlobalTableWitnesses" not in lease, "three replicas need no witness"
    assert sorted(replica["Region"] for replica in lease["Replicas"]) == sorted(plan.regions)
    assert all(
        sorted(replica["Region"] for replica in table["Replicas"]) == sorted(plan.regions)
        for table in tables.values()
    ), "every data table has a replica in each of the three regions"


def test_the_seed_profiles_record_at_lease_gives_way_to_regions(
    cdk_json_context: dict[str, Any],
) -> None:
    """Across regions the claim writes each execution: the region fault scenarios prove that
    path, not the lease's (docs/DEPLOY.md, `recordAtLease`)."""
    one = _config(cdk_json_context).tuning
    many = _config(cdk_json_context, **REGIONS_CONTEXT).tuning
    assert one.record_at_lease and one.environment()["TAKT_RECORD_AT_LEASE"] == "True"
    assert not many.record_at_lease
    assert many.environment()["TAKT_RECORD_AT_LEASE"] == "False"
    with pytest.raises(ContextError, match="'recordAtLease=true' is for one region"):
        _config(cdk_json_context, recordAtLease="true", **REGIONS_CONTEXT)


def test_the_seed_profiles_due_cursor_gives_way_to_regions(
    cdk_json_context: dict[str, Any], assembly: Path
) -> None:
    """Across regions a claim deletes each due item it fired: the replication is not proven
    with the cursor (docs/DEPLOY.md, `dueCursor`), in any region's functions."""
    one = _config(cdk_json_context).tuning
    many = _config(cdk_json_context, **REGIONS_CONTEXT).tuning
    assert one.due_cursor and one.environment()["TAKT_DUE_CURSOR"] == "True"
    assert not many.due_cursor
    assert many.environment()["TAKT_DUE_CURSOR"] == "False"
    with pytest.raises(ContextError, match="'dueCursor=true' is for one region"):
        _config(cdk_json_context, dueCursor="true", **REGIONS_CONTEXT)
    for region in (PRIMARY, SECOND):
        environments = _environments(_template(assembly, "TaktStateless", region))
        assert environments and all(
            env["TAKT_DUE_CURSOR"] == "False" for env in environments.values()
        ), f"{region}: every function deletes the due items its claims fired"
