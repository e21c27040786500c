"""The `fairness` context object: takt's defaults as shipped (fair claims on), checked at synth
with the key named, and each setting given only to the functions (and the Fargate worker) that
read it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App
from aws_cdk.assertions import Template

from infra.app import build
from infra.context import (
    FAIRNESS_KEYS,
    MAX_FAIRNESS_ENV_BYTES,
    ContextError,
    DeployConfig,
    FairnessTuning,
    settings_env_var,
)
from infra.functions import SPECS, WORKER
from infra.stateless import StatelessStack
from takt.config import RateLimit, Settings, TenantLimits
from tests.infra.conftest import FARGATE_CONTEXT, LogicalId, cdk_context

FAIRNESS_VARIABLES = {settings_env_var(field) for field in FAIRNESS_KEYS.values()}
# Every setting away from its default, so each one becomes a variable.
FAIRNESS_ON = {
    "claimMaxItems": 500,
    "claimReadPages": 8,
    "fairQueueSec": 2,
    "fairDispatchPerSec": 10,
    "fairDispatchBurstSec": 4,
    "tenantLimits": {"max_running": 20, "max_jobs": "null"},
    "tenantLimitOverrides": {"acme": {"weight": 3}},
    "hostRateLimits": {"api.example.com": {"per_sec": 5, "burst": 10}},
}
# Which settings reach which function: what each one's code reads (takt.wiring.Services).
LIMITS_AND_SHARES = {
    "TAKT_TENANT_LIMITS",
    "TAKT_TENANT_LIMIT_OVERRIDES",
    "TAKT_FAIR_DISPATCH_PER_SEC",
    "TAKT_FAIR_DISPATCH_BURST_SEC",
}
EXPECTED = {
    "api": LIMITS_AND_SHARES,
    "scheduler": set(),
    "claimer": LIMITS_AND_SHARES
    | {"TAKT_CLAIM_MAX_ITEMS", "TAKT_CLAIM_READ_PAGES", "TAKT_FAIR_QUEUE_SEC"},
    "worker": LIMITS_AND_SHARES | {"TAKT_HOST_RATE_LIMITS"},
    "watchdog": LIMITS_AND_SHARES,
    "indexer": set(),
}
# Lambda's limit on a function's variables, names and values together.
LAMBDA_ENV_BYTES = 4096
# Longer than any name, URL or ARN CloudFormation generates for takt's tables, lanes and roles.
REFERENCE_CHARS = 128


def _fairness(context: dict[str, Any], fairness: object) -> FairnessTuning:
    return DeployConfig.from_context(App(context=context | {"fairness": fairness}).node).fairness


def _variables(stateless: StatelessStack, template: Template, logical_id: LogicalId) -> Any:
    resources = template.to_json()["Resources"]
    return {
        spec.name: resources[logical_id(stateless, stateless.functions.functions[spec.name])][
            "Properties"
        ]["Environment"]["Variables"]
        for spec in SPECS
    }


@pytest.fixture(scope="module")
def fair_stacks() -> tuple[StatelessStack, Template]:
    """The app with every fairness setting on and the Fargate worker."""
    _, stateless = build(App(context=cdk_context(**FARGATE_CONTEXT, fairness=FAIRNESS_ON)))
    return stateless, Template.from_stack(stateless)


def test_shipped_fairness_is_settings_defaults_and_sets_no_variable(
    cdk_json_context: dict[str, Any],
) -> None:
    fairness = DeployConfig.from_context(App(context=cdk_json_context).node).fairness

    for field in FAIRNESS_KEYS.values():
        assert fairness.values[field] == Settings.model_fields[field].get_default(
            call_default_factory=True
        ), field
    assert fairness.environment(FAIRNESS_KEYS.values()) == {}


def test_shipped_template_gives_no_function_a_fairness_variable(
    stateless: StatelessStack, stateless_template: Template, logical_id: LogicalId
) -> None:
    for name, variables in _variables(stateless, stateless_template, logical_id).items():
        assert not FAIRNESS_VARIABLES & set(variables), name


def test_fairness_variables_read_back_as_the_context_gave_them(
    cdk_json_context: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fairness = _fairness(cdk_json_context, FAIRNESS_ON)
    for name, value in fairness.environment(FAIRNESS_KEYS.values()).items():
        monkeypatch.setenv(name, value)

    settings = Settings()

    assert settings.claim_max_items == 500
    assert settings.claim_read_pages == 8
    assert settings.fair_dispatch_per_sec == 10
    assert settings.fair_dispatch_burst_sec == 4
    assert settings.tenant_limits == TenantLimits(max_running=20, max_jobs=None)
    # An override replaces the limits for its tenant: what it leaves out is takt's default.
    assert settings.limits_for("acme") == TenantLimits(weight=3)
    assert settings.host_rate_limits == {"api.example.com": RateLimit(per_sec=5, burst=10)}


def test_fairness_from_the_command_line_is_json_and_keys_left_out_stay_off(
    cdk_json_context: dict[str, Any],
) -> None:
    fairness = _fairness(cdk_json_context, json.dumps({"claimMaxItems": "50"}))

    assert fairness.environment(FAIRNESS_KEYS.values()) == {"TAKT_CLAIM_MAX_ITEMS": "50"}


def test_fair_claims_are_on_as_shipped_and_null_strings_turn_them_off(
    cdk_json_context: dict[str, Any],
) -> None:
    shipped = _fairness(cdk_json_context, cdk_json_context["fairness"])
    off = _fairness(cdk_json_context, {"claimMaxItems": "null", "fairQueueSec": "null"})

    assert shipped.values["claim_max_items"] == Settings().claim_max_items == 10
    assert shipped.values["fair_queue_sec"] == Settings().fair_queue_sec == 0.5
    assert off.environment(FAIRNESS_KEYS.values()) == {
        "TAKT_CLAIM_MAX_ITEMS": "null",
        "TAKT_FAIR_QUEUE_SEC": "null",
    }


def test_a_null_string_lifts_a_limit_since_the_cdk_drops_nulls_in_context_objects(
    cdk_json_context: dict[str, Any],
) -> None:
    dropped = _fairness(cdk_json_context, {"tenantLimits": {"max_jobs": None}})
    lifted = _fairness(cdk_json_context, {"tenantLimits": {"max_jobs": "null"}})

    assert dropped.values["tenant_limits"] == TenantLimits(max_jobs=100_000)
    assert lifted.values["tenant_limits"] == TenantLimits(max_jobs=None)
    assert lifted.environment(["tenant_limits"]) == {"TAKT_TENANT_LIMITS": '{"max_jobs":null}'}


def test_a_limit_given_only_as_its_default_sets_no_variable(
    cdk_json_context: dict[str, Any],
) -> None:
    fairness = _fairness(
        cdk_json_context, {"fairDispatchBurstSec": 2, "tenantLimits": {"max_jobs": 100_000}}
    )

    assert fairness.environment(FAIRNESS_KEYS.values()) == {}


def test_set_fairness_reaches_exactly_the_functions_that_read_it(
    fair_stacks: tuple[StatelessStack, Template], logical_id: LogicalId
) -> None:
    variables = _variables(*fair_stacks, logical_id)

    assert {name: FAIRNESS_VARIABLES & set(v) for name, v in variables.items()} == EXPECTED
    assert variables["claimer"]["TAKT_CLAIM_MAX_ITEMS"] == "500"
    assert json.loads(variables["worker"]["TAKT_HOST_RATE_LIMITS"]) == {
        "api.example.com": {"per_sec": 5.0, "burst": 10}
    }
    assert json.loads(variables["api"]["TAKT_TENANT_LIMITS"]) == {
        "max_running": 20,
        "max_jobs": None,
    }


def test_fargate_worker_gets_the_worker_functions_fairness_settings(
    fair_stacks: tuple[StatelessStack, Template], logical_id: LogicalId
) -> None:
    stateless, template = fair_stacks
    worker = _variables(stateless, template, logical_id)[WORKER.name]
    (task,) = template.find_resources("AWS::ECS::TaskDefinition").values()
    (container,) = task["Properties"]["ContainerDefinitions"]
    environment = {item["Name"]: item["Value"] for item in container["Environment"]}

    assert {k: v for k, v in environment.items() if k in FAIRNESS_VARIABLES} == {
        k: v for k, v in worker.items() if k in FAIRNESS_VARIABLES
    }
    assert FAIRNESS_VARIABLES & set(environment) == EXPECTED[WORKER.name]


@pytest.mark.parametrize(
    ("fairness", "knob"),
    [
        ("claimMaxItems=5", "'fairness'"),
        ([1], "'fairness'"),
        ({"claimMaxItem": 5}, "fairness.claimMaxItem"),
        ({"claimMaxItems": 0}, "fairness.claimMaxItems"),
        ({"claimMaxItems": 2.5}, "fairness.claimMaxItems"),
        ({"claimMaxItems": True}, "fairness.claimMaxItems"),
        ({"fairDispatchPerSec": 0}, "fairness.fairDispatchPerSec"),
        ({"fairDispatchPerSec": "fast"}, "fairness.fairDispatchPerSec"),
        ({"fairDispatchBurstSec": -1}, "fairness.fairDispatchBurstSec"),
        ({"tenantLimits": {"max_runing": 3}}, "fairness.tenantLimits.max_runing"),
        ({"tenantLimits": {"weight": 1001}}, "fairness.tenantLimits.weight"),
        ({"tenantLimitOverrides": {"acme": {"weight": 0}}}, "fairness.tenantLimitOverrides.acme"),
        ({"tenantLimitOverrides": ["acme"]}, "fairness.tenantLimitOverrides"),
        ({"hostRateLimits": {"x.example": {"per_sec": 0}}}, "fairness.hostRateLimits.x.example"),
        ({"hostRateLimits": {"x.example": {"burst": 2}}}, "fairness.hostRateLimits.x.example"),
        ({"hostRateLimits": {"API.example.com": {"per_sec": 1}}}, "API.example.com"),
        ({"hostRateLimits": {"api.example.com:443": {"per_sec": 1}}}, "api.example.com:443"),
        ({"hostRateLimits": {"https://api.example.com": {"per_sec": 1}}}, "https://api"),
    ],
)
def test_bad_fairness_fails_with_its_key(
    cdk_json_context: dict[str, Any], fairness: object, knob: str
) -> None:
    with pytest.raises(ContextError, match=knob):
        _fairness(cdk_json_context, fairness)


def test_an_ipv6_host_is_keyed_without_brackets(cdk_json_context: dict[str, Any]) -> None:
    fairness = _fairness(cdk_json_context, {"hostRateLimits": {"fd00::1": {"per_sec": 1}}})

    assert fairness.values["host_rate_limits"] == {"fd00::1": RateLimit(per_sec=1)}


def test_fairness_too_large_for_a_functions_environment_fails_the_synth(
    cdk_json_context: dict[str, Any],
) -> None:
    overrides = {f"tenant-{i:03}": {"max_running": 10, "weight": 2} for i in range(100)}

    with pytest.raises(ContextError, match=r"'fairness' takes \d+ bytes"):
        _fairness(cdk_json_context, {"tenantLimitOverrides": overrides})


def _length(value: object) -> int:
    """A variable's length once deployed, each reference counted as REFERENCE_CHARS."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict) and "Fn::Join" in value:
        return sum(_length(part) for part in value["Fn::Join"][1])
    return REFERENCE_CHARS


def test_fairness_budget_and_the_rest_of_a_functions_variables_fit_lambdas_limit(
    stateless: StatelessStack, stateless_template: Template, logical_id: LogicalId
) -> None:
    for name, variables in _variables(stateless, stateless_template, logical_id).items():
        used = sum(len(key) + _length(value) for key, value in variables.items())
        assert used + MAX_FAIRNESS_ENV_BYTES <= LAMBDA_ENV_BYTES, name


def test_deploy_doc_names_every_fairness_key_and_variable() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "DEPLOY.md").read_text()

    for key, field in FAIRNESS_KEYS.items():
        assert f"`{key}`" in doc, key
        assert f"`{settings_env_var(field)}`" in doc, field
