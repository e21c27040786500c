"""The CLI covers the API's contract: every field and every enum value a job's create or update
body takes has its flag (read from `docs/openapi.json`, not from the CLI's own tables), so the
CLI cannot lag the API again (issue 29: `--overlap replace`, `--run-late`, `--pause-until`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import click
import pytest

from takt.api.errors import InvalidRequestError
from takt.api.patch import check_not_late
from takt.models.records import JobRecord
from takt_cli.commands.job_fields import JobFlag
from takt_cli.commands.jobs import CREATE_FLAGS, UPDATE_FLAGS, create, update
from takt_cli.commands.main import main
from tests.support.contract import job_fields
from tests.unit.cli.conftest import FakeApi

COMMANDS: dict[str, tuple[click.Command, list[JobFlag]]] = {
    "JobCreate": (create, CREATE_FLAGS),
    "JobPatch": (update, UPDATE_FLAGS),
}


def _flag_of(model: str, field: str) -> click.Option | None:
    """The option of the model's command that sets `field`, if any."""
    command, flags = COMMANDS[model]
    names = [f.flag for f in flags if f.field == field]
    options = [
        p for p in command.params if isinstance(p, click.Option) and set(p.opts) & set(names)
    ]
    return options[0] if options else None


@pytest.mark.parametrize("model", list(COMMANDS))
def test_every_field_of_the_job_contract_has_a_flag(model: str) -> None:
    missing = [field for field, _ in job_fields(model) if _flag_of(model, field) is None]

    assert missing == [], f"a flag for every field: {model} fields without one: {missing}"


@pytest.mark.parametrize("model", list(COMMANDS))
def test_every_enum_value_of_the_job_contract_is_a_choice_of_its_flag(model: str) -> None:
    refused = []
    for field, values in job_fields(model):
        option = _flag_of(model, field)
        if option is None:
            continue
        for value in values:
            try:
                option.type.convert(value, option, None)
            except click.BadParameter:
                refused.append(f"{field}={value}")

    assert refused == [], f"a choice for every enum value: {model} flags refuse {refused}"


def _sent(fake_api: FakeApi, *args: str) -> Any:
    fake_api.answers["/v1/jobs"] = {"id": "job_01", "status": "active", "schedule": "* * * * *"}
    fake_api.answers["/v1/jobs/job_01"] = fake_api.answers["/v1/jobs"]
    code = main(["--endpoint", fake_api.url, "-o", "json", "jobs", *args])
    assert code == 0
    return json.loads(fake_api.received[-1].body)


def test_jobs_create_sends_the_fields_the_cli_once_lacked(fake_api: FakeApi) -> None:
    body = _sent(
        fake_api,
        *("create", "--every", "1h", "--target", "https://svc.example/hook"),
        *("--overlap", "replace", "--run-late", "--pause-until", "2030-01-01T00:00:00Z"),
        *("--status", "paused", "--idempotency-key", "k-1", "--notify-to", "https://n.example/"),
    )

    assert body == {
        "interval": "1h",
        "target": "https://svc.example/hook",
        "overlap": "replace",
        "run_late": True,
        "pause_until": "2030-01-01T00:00:00Z",
        "status": "paused",
        "idempotency_key": "k-1",
        "notify": {"to": "https://n.example/"},
    }, "a flag for every field: each flag sets its field of the create body"


def test_jobs_create_reads_tasks_as_json(fake_api: FakeApi) -> None:
    tasks = [{"id": "a", "target": "https://svc.example/a"}]

    body = _sent(fake_api, "create", "--every", "1h", "--tasks", json.dumps(tasks))

    assert body == {"interval": "1h", "tasks": tasks}, "a workflow's tasks flag is JSON"


def test_jobs_update_sends_only_the_flags_given(fake_api: FakeApi) -> None:
    body = _sent(fake_api, "update", "job_01", "--overlap", "replace", "--run-late")

    assert body == {"overlap": "replace", "run_late": True}, (
        "an update sends only the fields its flags name"
    )


def test_an_update_s_help_names_no_default_a_create_s_does() -> None:
    create_help = {f.flag: f.settings["help"] for f in CREATE_FLAGS}
    update_help = {f.flag: f.settings["help"] for f in UPDATE_FLAGS}

    assert "[default: allow]" in create_help["--overlap"], "a create's help gives the default"
    assert "default" not in update_help["--overlap"], (
        "an update keeps a field not given, so its help names no default"
    )


def test_a_zone_outside_the_contract_is_one_error_line(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--endpoint", fake_api.url, "jobs", "create", "--every", "1h", "--tz", "Mars/X"])
    err = capsys.readouterr().err

    assert code != 0
    assert len(err.splitlines()) == 1, f"bad input is one error line, not the zone list: {err}"
    assert "'Mars/X' is not one of the" in err
    assert fake_api.received == [], "bad input sends nothing"


def _late_run_at_problem() -> dict[str, Any]:
    """The API's own problem for a `run_at` older than the catch-up window."""
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    job = JobRecord(
        tenant_id="t",
        job_id="job_01",
        run_at=now - timedelta(days=1),
        anchor=now,
        target="https://svc.example/hook",
        created_at=now,
        updated_at=now,
    )
    with pytest.raises(InvalidRequestError) as refused:
        check_not_late(job, now)
    return {"title": "Invalid request", "status": 400, "detail": refused.value.detail}


def test_a_late_run_at_s_error_names_the_cli_flag_not_the_body_field(
    fake_api: FakeApi, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.answers["/v1/jobs"] = _late_run_at_problem()
    fake_api.statuses["/v1/jobs"] = 400
    args = ["--endpoint", fake_api.url, "jobs", "create", "--run-at", "2020-01-01T00:00:00Z"]

    code = main([*args, "--target", "https://svc.example/hook"])
    err = capsys.readouterr().err

    assert code == 1
    assert "add --run-late" in err and "run_late: true" not in err, (
        f"a flag for every field: the CLI's error advises the flag, not the body field: {err}"
    )
