"""Kubernetes CronJobs to job bodies: every field of the mapping, and CronJobs back."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml
from click.testing import CliRunner
from croniter import croniter

from takt.models.targets import target_object
from takt.schedule import CronSchedule, preview
from takt_cli.commands.context import CliContext
from takt_cli.commands.migrate import import_
from takt_cli.migrate import Imported, k8s

TARGET = "https://runner.example/run"
AFTER = datetime(2026, 4, 1, tzinfo=UTC)


def _cronjob(schedule: str, **spec: Any) -> dict[str, Any]:
    job_spec = spec.pop("job_spec", {})
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": spec.pop("metadata", {"name": "report"}),
        "spec": {
            "schedule": schedule,
            **spec,
            "jobTemplate": {
                "spec": {
                    **job_spec,
                    "template": {"spec": {"containers": [{"name": "r", "image": "ex/r:1"}]}},
                }
            },
        },
    }


def _load(*manifests: dict[str, Any]) -> list[Imported]:
    return k8s.load(yaml.safe_dump_all(manifests), TARGET)


def _body(**kwargs: Any) -> dict[str, Any]:
    schedule = str(kwargs.pop("schedule", "0 6 * * *"))
    (item,) = _load(_cronjob(schedule, **kwargs))
    assert item.body is not None, item.reason
    return item.body


def test_every_field_maps() -> None:
    body = _body(
        schedule="30 9 * * 1-5",
        timeZone="Europe/Berlin",
        suspend=True,
        concurrencyPolicy="Forbid",
        startingDeadlineSeconds=120,
        metadata={"name": "nightly", "namespace": "reports"},
        job_spec={"backoffLimit": 2, "activeDeadlineSeconds": 900},
    )

    assert body == {
        "name": "reports/nightly",
        "time_zone": "Europe/Berlin",
        "schedule": "30 9 * * 1-5",
        "dst": {"gap": "skip", "overlap": "twice"},
        "status": "paused",
        "overlap": "skip",
        "catchup": "all",
        "catchup_window": "120s",
        "retry": {"max_attempts": 3},
        "timeout_sec": 900,
        "target": TARGET,
        "payload": {"name": "r", "image": "ex/r:1"},
    }


@pytest.mark.parametrize(
    ("policy", "overlap"), [("Allow", "allow"), ("Forbid", "skip"), ("Replace", "replace")]
)
def test_concurrency_policy_becomes_the_overlap_rule(policy: str, overlap: str) -> None:
    assert _body(concurrencyPolicy=policy)["overlap"] == overlap


def test_defaults_are_kubernetes_own() -> None:
    body = _body()
    assert (body["overlap"], body["retry"], body["time_zone"], "status" in body) == (
        "allow",
        {"max_attempts": 7},
        "UTC",
        False,
    )


@pytest.mark.parametrize("prefix", ["CRON_TZ", "TZ"])
def test_a_zone_prefix_becomes_the_time_zone(prefix: str) -> None:
    body = _body(schedule=f"{prefix}=Asia/Tokyo 0 9 * * *")
    assert (body["schedule"], body["time_zone"]) == ("0 9 * * *", "Asia/Tokyo")


def test_a_prefix_and_a_time_zone_that_disagree_are_refused() -> None:
    (item,) = _load(_cronjob("CRON_TZ=Asia/Tokyo 0 9 * * *", timeZone="UTC"))
    assert item.body is None
    assert "disagree" in (item.reason or "")


def test_every_becomes_an_interval() -> None:
    body = _body(schedule="@every 90m")
    assert (body.get("interval"), "schedule" in body) == ("90m", False)


def test_a_question_mark_day_is_any_day() -> None:
    assert _body(schedule="0 6 ? * 1")["schedule"] == "0 6 * * 1"


def test_a_star_step_day_beside_a_weekday_is_written_as_a_list_takt_ors() -> None:
    """Rule: robfig reads `*/2` as restricted and ORs it with a weekday; takt would AND a field
    starting with `*`, so the days are written as a range that takt ORs too."""
    assert _body(schedule="0 6 */2 * 1")["schedule"] == "0 6 1-31/2 * 1", "robfig ORs '*/2'"


def test_a_step_after_the_first_item_is_kept_as_both_or_it() -> None:
    assert _body(schedule="0 6 1,*/2 * 1")["schedule"] == "0 6 1,*/2 * 1"


def test_six_fields_are_refused_as_kubernetes_has_no_seconds() -> None:
    (item,) = _load(_cronjob("0 0 6 * * *"))
    assert "five fields" in (item.reason or "")


def test_a_macro_is_kept() -> None:
    assert _body(schedule="@hourly")["schedule"] == "@hourly"


def test_an_invalid_schedule_is_refused_with_the_apis_reason() -> None:
    (item,) = _load(_cronjob("0 25 * * *"))
    assert item.body is None
    assert "hour" in (item.reason or "")


def test_several_documents_and_lists_and_other_kinds() -> None:
    listing: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": [_cronjob("0 1 * * *")]}
    other: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    items = _load(_cronjob("0 2 * * *"), other, listing)
    assert [i.body and i.body["schedule"] for i in items] == ["0 2 * * *", "0 1 * * *"]


def test_idempotency_keys_come_from_namespace_and_name() -> None:
    first = _load(_cronjob("0 1 * * *", metadata={"name": "a", "namespace": "n"}))[0]
    again = _load(_cronjob("0 1 * * *", metadata={"name": "a", "namespace": "n"}))[0]
    other = _load(_cronjob("0 1 * * *", metadata={"name": "a"}))[0]
    assert first.key == again.key == "import:k8s:n/a"
    assert other.key == "import:k8s:default/a"


@pytest.mark.parametrize(
    ("schedule", "tz"),
    [("*/20 8-18 * * 1-5", "America/New_York"), ("15 10 1,15 * *", "Europe/London")],
)
def test_the_job_fires_when_croniter_says_the_cronjob_does(schedule: str, tz: str) -> None:
    body = _body(schedule=schedule, timeZone=tz)
    expected = islice(croniter(schedule, AFTER.astimezone(ZoneInfo(tz))).all_next(datetime), 50)
    takt = preview(CronSchedule(str(body["schedule"]), str(body["time_zone"])), AFTER, 50)
    assert takt == [t.astimezone(UTC) for t in expected]


def _job(**fields: object) -> dict[str, object]:
    return {
        "id": "job_1",
        "name": "reports/nightly",
        "status": "active",
        "schedule": "30 9 * * 1-5",
        "time_zone": "Europe/Berlin",
        "overlap": "skip",
        "retry": {"max_attempts": 3},
        "timeout_sec": 900,
        "catchup": "all",
        "catchup_window": "120s",
        "payload": {"name": "r", "image": "ex/r:1"},
        "jitter": None,
        **fields,
    }


def test_a_job_exports_as_a_cronjob_that_imports_as_the_same_job() -> None:
    exported = k8s.export(_job())
    assert exported.item is not None
    (again,) = k8s.load(yaml.safe_dump(exported.item), TARGET)
    assert again.body is not None
    assert {k: again.body[k] for k in ("schedule", "time_zone", "overlap", "retry", "payload")} == {
        "schedule": "30 9 * * 1-5",
        "time_zone": "Europe/Berlin",
        "overlap": "skip",
        "retry": {"max_attempts": 3},
        "payload": {"name": "r", "image": "ex/r:1"},
    }
    assert again.body["name"] == "reports/nightly"


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"schedule": None, "interval": "1h"}, "cron schedule"),
        ({"payload": {"command": "x"}}, "container"),
        ({"overlap": "queue"}, "concurrencyPolicy"),
        ({"schedule": "0 0 L * *"}, "'L'"),
    ],
)
def test_what_a_cronjob_cannot_say_is_not_exported(fields: dict[str, object], words: str) -> None:
    exported = k8s.export(_job(**fields))
    assert exported.item is None
    assert words in (exported.reason or "")


def _pod(**pod: Any) -> dict[str, Any]:
    """A plain CronJob whose pod spec is `pod`."""
    manifest = _cronjob("0 6 * * *")
    manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"] = pod
    return manifest


def _container_item(**pod: Any) -> Imported:
    (item,) = k8s.load(yaml.safe_dump(_pod(**pod)), None)
    return item


def test_k8s_cronjob_without_target_imports_its_container_as_a_container_target() -> None:
    item = _container_item(
        containers=[
            {
                "name": "report",
                "image": "ghcr.io/acme/report:2.1",
                "command": ["python", "-m", "report"],
                "args": ["--daily"],
                "env": [{"name": "REGION", "value": "eu"}],
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
            }
        ]
    )

    assert item.body is not None, item.reason
    assert item.body["target"] == {
        "type": "container",
        "image": "ghcr.io/acme/report:2.1",
        "command": ["python", "-m", "report", "--daily"],
        "environment": {"REGION": "eu"},
        "cpu": 1024,
        "memory": 2048,
    }, "without --target the pod's container becomes the job's container target"
    assert "payload" not in item.body, "the container is the target, not a payload"


def test_k8s_container_resources_round_up_to_fargate_sizes_with_a_note() -> None:
    item = _container_item(
        containers=[
            {"name": "r", "image": "ex/r:1", "resources": {"requests": {"cpu": "300m"}}},
        ]
    )

    assert item.body is not None, item.reason
    assert (item.body["target"]["cpu"], item.body["target"]["memory"]) == (512, 1024), (
        "0.3 vCPU runs on Fargate's 0.5 vCPU size, with its least memory"
    )
    assert any("rounded up to Fargate's cpu 512" in note for note in item.notes), item.notes


def test_k8s_container_target_notes_what_cannot_carry_over() -> None:
    item = _container_item(
        restartPolicy="OnFailure",
        volumes=[{"name": "data", "emptyDir": {}}],
        initContainers=[{"name": "init", "image": "ex/init:1"}],
        containers=[
            {
                "name": "r",
                "image": "ex/r:1",
                "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "t"}}}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            }
        ],
    )

    assert item.body is not None, item.reason
    notes = " | ".join(item.notes)
    for words in (
        "env TOKEN comes from valueFrom",
        "pod volumes not carried",
        "pod initContainers not carried",
        "restartPolicy OnFailure not carried",
        "container volumeMounts not carried",
    ):
        assert words in notes, f"what a container target cannot carry is noted ({words}): {notes}"
    assert "environment" not in item.body["target"], "a secret's value is never copied"


def test_k8s_pod_with_several_containers_is_refused_without_target() -> None:
    item = _container_item(
        containers=[{"name": "a", "image": "ex/a:1"}, {"name": "b", "image": "ex/b:1"}]
    )

    assert item.body is None, "a container target runs one container"
    assert item.reason is not None and "2 containers" in item.reason, item.reason


def test_k8s_import_dry_run_prints_a_container_target_body_without_target(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "cronjob.yaml"
    manifest.write_text(yaml.safe_dump(_cronjob("0 6 * * *")))

    result = CliRunner().invoke(
        import_,
        ["k8s", str(manifest), "--dry-run"],
        obj=CliContext(endpoint="", output="json"),
    )

    assert result.exit_code == 0, result.output
    (body,) = json.loads(result.stdout)
    assert body["target"] == {"type": "container", "image": "ex/r:1", "cpu": 256, "memory": 512}, (
        "takt -o json import k8s FILE --dry-run prints a container-target body (issue 29)"
    )


def test_k8s_container_target_exports_and_imports_back_as_the_same_target() -> None:
    (item,) = k8s.load(
        yaml.safe_dump(
            _pod(
                containers=[
                    {
                        "name": "r",
                        "image": "ex/r:1",
                        "args": ["--daily"],
                        "env": [{"name": "REGION", "value": "eu"}],
                        "resources": {"limits": {"cpu": "2", "memory": "6Gi"}},
                    }
                ]
            )
        ),
        None,
    )
    assert item.body is not None, item.reason
    target = item.body["target"]
    stored = target_object(target).text()

    exported = k8s.export(_job(target=stored, payload=None))

    assert exported.item is not None, exported.reason
    (again,) = k8s.load(yaml.safe_dump(exported.item), None)
    assert again.body is not None, again.reason
    assert again.body["target"] == target, "a container target survives export and re-import"
    assert not any("rounded up" in note for note in again.notes), again.notes
