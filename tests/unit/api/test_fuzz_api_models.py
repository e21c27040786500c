"""Fuzzing the API's request models with hypothesis: any JSON body is either a valid create or
patch, or a pydantic `ValidationError` the API turns into a 400 naming the field; nothing else
escapes (an escape would be a 500, and possibly a half-applied change)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from takt.api.models import JobCreate, JobPatch

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "1h",
            "0s",
            "-5m",
            "PT1H",
            "* * * * *",
            "0 0 30 2 *",
            "UTC",
            "Nowhere/Land",
            "2026-03-03T00:00:00Z",
            "2026-03-03T00:00:00",
            "https://svc/hook",
            "handler:x",
            "ftp://x",
            "skip",
            "once",
            "all",
            "queue",
            "allow",
            "high",
            "low",
            "exponential",
        ]
    ),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = sorted(set(JobCreate.model_fields) | set(JobPatch.model_fields) | {"tenant_id"})
BODIES = st.one_of(JSON, st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6))


def _validates_or_refuses(model: type[JobCreate] | type[JobPatch], body: Any) -> None:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        assert exc.errors(), "a refusal must say what is wrong"


@settings(max_examples=100, deadline=None)
@given(BODIES)
def test_fuzz_job_create_validates_or_refuses(body: Any) -> None:
    _validates_or_refuses(JobCreate, body)


@settings(max_examples=100, deadline=None)
@given(BODIES)
def test_fuzz_job_patch_validates_or_refuses(body: Any) -> None:
    _validates_or_refuses(JobPatch, body)
