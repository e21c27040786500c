"""Container targets through the API: stored as their object in JSON, refused with a 400
problem+json naming the field, and nothing stored for a refused one."""

from __future__ import annotations

import pytest

from tests.api.harness import PROBLEM_JSON, Api

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

IMAGE = "public.ecr.aws/docker/library/busybox:1.36"


def test_api_stores_a_container_target_as_its_compact_json(api: Api) -> None:
    job = api.created_job(
        {
            "interval": "1h",
            "target": {"type": "container", "image": IMAGE, "command": ["true"]},
        }
    )

    assert job["target"] == (
        f'{{"command":["true"],"cpu":256,"image":"{IMAGE}","memory":512,"type":"container"}}'
    ), "a container target is stored (and shown) as its object with its defaults written out"


def test_api_refuses_a_container_fargate_cannot_size_with_400_and_stores_nothing(
    api: Api,
) -> None:
    resp = api.create(
        {"interval": "1h", "target": {"type": "container", "image": IMAGE, "memory": 99}}
    )

    assert resp.status == 400, resp.text
    assert resp.content_type == PROBLEM_JSON, "a refused target answers problem+json"
    error = resp.json["errors"][0]
    assert error["field"] == "target", f"the refusal names the target field: {error}"
    assert "memory is 512 to 2048 MiB" in error["message"], f"and what Fargate allows: {error}"
    assert api.request("GET", "/v1/jobs").json["items"] == [], "nothing is stored"
