"""The importers write only choices the API's models take: a Kubernetes concurrencyPolicy and
each source's DST rule map onto the model's enums (issue 30: one source for every enum)."""

from __future__ import annotations

from typing import get_args

from takt.models.records import Dst, OverlapPolicy
from takt_cli.migrate import eventbridge, k8s


def test_each_concurrency_policy_imports_as_an_overlap_the_model_takes() -> None:
    written = set(k8s._OVERLAP.values())

    assert written <= set(get_args(OverlapPolicy)), (
        f"the importers write only the model's choices: {written}"
    )


def test_each_source_s_dst_rule_is_a_dst_the_model_takes() -> None:
    for rule in (k8s.ROBFIG_DST, eventbridge.AWS_DST):
        assert Dst.model_validate(rule).model_dump() == rule, (
            "the importers write only the model's choices"
        )
