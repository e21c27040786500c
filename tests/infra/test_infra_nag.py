"""cdk-nag's AWS Solutions rules find nothing unsuppressed in either stack.

`has_no_error` rather than `find_error(...) == []`: with aws-cdk-lib 2.275 jsii cannot hand a
non-empty `find_error` result to Python (its MetadataEntry type does not resolve), so a failure
would surface as a ValueError instead of the findings; `has_no_error` lists them.
"""

from __future__ import annotations

import pytest
from aws_cdk import Aspects, Stack
from aws_cdk.assertions import Annotations, Match
from cdk_nag import AwsSolutionsChecks

NAG_FINDING = Match.string_like_regexp("AwsSolutions-.*")


@pytest.mark.parametrize("stack_name", ["stateful", "stateless", "fargate_stateless"])
def test_cdk_nag_reports_no_unsuppressed_error(
    stack_name: str, request: pytest.FixtureRequest
) -> None:
    stack: Stack = request.getfixturevalue(stack_name)

    Annotations.from_stack(stack).has_no_error("*", NAG_FINDING)


def test_the_app_applies_the_aws_solutions_checks(stateful: Stack) -> None:
    app_aspects = Aspects.of(stateful.node.root).all

    assert any(isinstance(aspect, AwsSolutionsChecks) for aspect in app_aspects)
