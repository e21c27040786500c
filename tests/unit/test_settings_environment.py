"""How `Settings` reads the environment the CDK app writes (takt.config.environment_values): the
rules the deployment relies on, now that takt reads `TAKT_*` itself instead of through
pydantic-settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from takt.config import Settings, TenantLimits


def test_a_plain_setting_is_read_from_its_variable_and_typed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAKT_DUE_SHARDS", "64")
    monkeypatch.setenv("TAKT_LEASE_SEC", "45.5")

    settings = Settings()

    assert settings.due_shards == 64
    assert settings.lease_sec == 45.5


def test_variable_names_match_without_regard_to_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("takt_jobs_table", "jobs-lower")

    assert Settings().jobs_table == "jobs-lower"


def test_collections_and_models_are_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAKT_LANE_URLS", '{"high": "https://q/high"}')
    monkeypatch.setenv("TAKT_EGRESS_ALLOW", '["10.0.0.0/8"]')
    monkeypatch.setenv("TAKT_TENANT_LIMITS", '{"max_jobs": 5}')
    monkeypatch.setenv("TAKT_TENANT_LIMIT_OVERRIDES", '{"acme": {"max_jobs": 7}}')

    settings = Settings()

    assert settings.lane_urls == {"high": "https://q/high"}
    assert settings.egress_allow == ("10.0.0.0/8",)
    assert settings.tenant_limits.max_jobs == 5
    assert settings.tenant_limit_overrides["acme"] == TenantLimits(max_jobs=7)


def test_null_turns_an_optional_setting_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAKT_JWT_DEFAULT_ROLE", "null")
    monkeypatch.setenv("TAKT_CLAIM_MAX_ITEMS", "null")

    settings = Settings()

    assert settings.jwt_default_role is None
    assert settings.claim_max_items is None


def test_a_value_passed_to_the_constructor_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAKT_DUE_SHARDS", "64")

    assert Settings(due_shards=8).due_shards == 8


def test_a_variable_of_another_prefix_or_an_unknown_name_is_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DUE_SHARDS", "99")
    monkeypatch.setenv("TAKT_NO_SUCH_SETTING", "1")

    assert Settings().due_shards == Settings.model_fields["due_shards"].default


def test_a_json_setting_that_is_not_json_names_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TAKT_LANE_URLS", "high=https://q/high")

    with pytest.raises(ValueError, match="TAKT_LANE_URLS is not JSON"):
        Settings()


def test_a_value_out_of_its_bounds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAKT_DUE_SHARDS", "0")

    with pytest.raises(ValidationError, match="due_shards"):
        Settings()


@pytest.mark.parametrize("raw", ['["us-east-1", "us-east-2"]', "us-east-1, us-east-2"])
def test_the_regions_are_a_json_list_or_a_comma_list(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv("TAKT_REGIONS", raw)
    monkeypatch.setenv("TAKT_REGION", "us-east-2")

    assert Settings().regions == ("us-east-1", "us-east-2"), "TAKT_REGIONS: JSON or commas"


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"regions": "us-east-1,us-east-2", "region": "eu-west-1"}, "is not one of regions"),
        ({"regions": "us-east-1,us-east-1"}, "lists a region twice"),
        ({"regions": "us-east-1,us-east-2", "region_renew_sec": 15}, "must be shorter than"),
    ],
)
def test_regions_that_cannot_be_fenced_are_refused(values: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        Settings(**values)
