"""The container target kind: what the one validator of targets accepts and refuses."""

from __future__ import annotations

from typing import Any

import pytest

from takt.models.targets import ContainerSpec, parse_target, target_object

IMAGE = "public.ecr.aws/docker/library/busybox:1.36"


def test_container_target_is_stored_as_sorted_compact_json_and_reads_back_the_same() -> None:
    given = {
        "type": "container",
        "image": IMAGE,
        "command": ["sh", "-c", "exit 0"],
        "environment": {"B": "2", "A": "1"},
        "cpu": 512,
        "memory": 2048,
    }
    text = target_object(given).text()

    assert text == (
        '{"command":["sh","-c","exit 0"],"cpu":512,"environment":{"A":"1","B":"2"},'
        f'"image":"{IMAGE}","memory":2048,"type":"container"}}'
    ), "a container target's stored form is its object in compact JSON with sorted keys"
    assert parse_target(text) == ContainerSpec(
        IMAGE, ("sh", "-c", "exit 0"), (("A", "1"), ("B", "2")), 512, 2048
    ), "the worker reads the stored form back as the same container"


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"cpu": 300}, "cpu is one of 256, 512"),
        ({"cpu": 256, "memory": 4096}, "with cpu 256, memory is 512 to 2048 MiB"),
        ({"image": "busy box"}, "image: image is an image reference"),
        ({"image": ""}, "image: image is an image reference"),
        ({"environment": {"TAKT_PAYLOAD": "x"}}, "names starting TAKT_ are takt's own"),
        ({"environment": {"1A": "x"}}, "is not an environment variable name"),
        ({"command": ["x"] * 65}, "command: List should have at most 64 items"),
        ({"command": ["x" * 1025]}, "at most 1024 characters"),
        ({"environment": {f"V{i}": "x" * 1000 for i in range(5)}}, "at most 4096 characters"),
        ({"runtime": "docker"}, "runtime: Extra inputs are not permitted"),
    ],
)
def test_container_target_refuses_what_fargate_or_takt_cannot_run_with_a_clear_reason(
    fields: dict[str, Any], why: str
) -> None:
    with pytest.raises(ValueError) as caught:
        target_object({"type": "container", "image": IMAGE, **fields})
    assert why in str(caught.value), f"a bad container target is refused naming why: {caught}"
