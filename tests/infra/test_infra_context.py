"""Deployment knobs are read from context, as cdk.json or `-c` give them, and checked early."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App

from infra.context import ContextError, DeployConfig, JwtAuth, LaneTuning
from takt.config import LANES


def _config(context: dict[str, Any], **overrides: Any) -> DeployConfig:
    return DeployConfig.from_context(App(context=context | overrides).node)


def test_shipped_context_selects_iam_and_tunes_every_lane(
    cdk_json_context: dict[str, Any],
) -> None:
    config = _config(cdk_json_context)

    assert config.jwt is None
    assert set(config.lanes) == set(LANES)
    assert config.lanes["high"] == LaneTuning(max_concurrency=50, batching_window_sec=0)


def test_command_line_strings_are_accepted(cdk_json_context: dict[str, Any]) -> None:
    config = _config(
        cdk_json_context,
        auth="jwt",
        jwtIssuer="https://issuer.example/",
        jwtAudience="takt, admin",
        apiRateLimit="25",
        lanes=json.dumps(cdk_json_context["lanes"]),
    )

    assert config.jwt == JwtAuth(issuer="https://issuer.example/", audience=("takt", "admin"))
    assert config.api_rate_limit == 25


@pytest.mark.parametrize(
    ("overrides", "knob"),
    [
        ({"auth": "basic"}, "auth"),
        ({"auth": "jwt"}, "jwtIssuer"),
        ({"auth": "jwt", "jwtIssuer": "https://issuer.example/"}, "jwtAudience"),
        ({"apiBurstLimit": "many"}, "apiBurstLimit"),
        ({"logLevel": "CHATTY"}, "logLevel"),
        ({"lanes": {"high": {"maxConcurrency": 2, "batchingWindowSec": 0}}}, "lanes"),
        (
            {"lanes": {lane: {"maxConcurrency": 1, "batchingWindowSec": 0} for lane in LANES}},
            "maxConcurrency",
        ),
        (
            {"lanes": {lane: {"maxConcurrency": 5, "batchingWindowSec": 30} for lane in LANES}},
            "batchingWindowSec",
        ),
    ],
)
def test_bad_knob_fails_with_its_name(
    cdk_json_context: dict[str, Any], overrides: dict[str, Any], knob: str
) -> None:
    with pytest.raises(ContextError, match=knob):
        _config(cdk_json_context, **overrides)


def test_missing_knob_fails_with_its_name(cdk_json_context: dict[str, Any]) -> None:
    context = {key: value for key, value in cdk_json_context.items() if key != "logLevel"}

    with pytest.raises(ContextError, match="logLevel"):
        _config(context)
