"""Each main component receives the settings it reads, cut from `Settings` by name."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, fields

import pytest

from takt.api.dependencies import ApiSettings
from takt.config import Settings, TenantLimits, settings_slice
from takt.dispatch.claimer import ClaimerSettings
from takt.watchdog.sweeper import WatchdogSettings
from takt.worker.runner import RunnerSettings

SLICES = (ApiSettings, ClaimerSettings, RunnerSettings, WatchdogSettings)


@pytest.mark.parametrize("kind", SLICES, ids=lambda kind: kind.__name__)
def test_a_slice_holds_the_values_of_the_settings_it_names(kind: type) -> None:
    settings = Settings(
        lease_sec=41.0,
        clock_margin_sec=3.0,
        pending_resend_after_sec=45.0,
        claim_max_items=7,
        tenants_table="t-tenants",
        region="eu-west-1",
    )

    cut: object = settings_slice(kind, settings)

    assert {f.name: getattr(cut, f.name) for f in fields(kind)} == {
        f.name: getattr(settings, f.name) for f in fields(kind)
    }
    with pytest.raises(FrozenInstanceError):
        setattr(cut, fields(kind)[0].name, None)


def test_a_slice_naming_a_setting_that_does_not_exist_is_refused() -> None:
    @dataclass(frozen=True)
    class Misspelt:
        lease_secs: float

    with pytest.raises(AttributeError, match="lease_secs"):
        settings_slice(Misspelt, Settings())


def test_the_claimer_weighs_tenants_by_their_overrides() -> None:
    settings = Settings(tenant_limit_overrides={"big": TenantLimits(weight=5)})

    cut = ClaimerSettings.of(settings)

    assert cut.limits_for("big").weight == 5
    assert cut.limits_for("small").weight == settings.tenant_limits.weight
