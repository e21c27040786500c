"""A worker serving one tenant (`takt worker --tenant`, `TAKT_WORKER_TENANT`) leases only that
tenant's executions: another tenant's message is sent back unleased, for another worker."""

from __future__ import annotations

from dataclasses import replace

from click.testing import CliRunner

from takt.models.lanes import LaneMessage
from takt.models.records import ExecState
from takt.wiring import Services
from takt_cli.commands.worker import worker
from tests.api.harness import OTHER_TENANT, TENANT, Api, lane_messages


def triggered_message(api: Api) -> LaneMessage:
    job = api.created_job(
        {"name": "j", "interval": "1h", "target": "https://svc.example/hook", "retry": {}}
    )
    assert api.request("POST", f"/v1/jobs/{job['id']}/trigger").status == 202
    [body] = lane_messages(api.svc)
    return LaneMessage.model_validate(body)


def scoped(svc: Services, tenant: str) -> Services:
    return replace(svc, settings=svc.settings.model_copy(update={"worker_tenant": tenant}))


def test_another_tenants_execution_is_sent_back_unleased(api: Api) -> None:
    message = triggered_message(api)

    outcome = scoped(api.svc, OTHER_TENANT).runner.process(message)

    assert outcome.state == "unserved"
    record = api.svc.executions.get(TENANT, message.execution_id)
    assert (record.state, record.attempt, record.lease_token) == (ExecState.PENDING, 1, None)
    attributes = api.svc.clients.sqs.get_queue_attributes(
        QueueUrl=api.svc.settings.lane_url("default"),
        AttributeNames=["ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesDelayed"] == "1"  # a fresh copy, for later


def test_its_own_tenants_execution_is_leased(api: Api) -> None:
    message = triggered_message(api)

    outcome = scoped(api.svc, TENANT).runner.process(message)

    assert outcome.state != "unserved"
    assert api.svc.executions.get(TENANT, message.execution_id).state != ExecState.PENDING


def test_takt_worker_takes_a_tenant_option() -> None:
    result = CliRunner().invoke(worker, ["--help"])

    assert "--tenant" in result.output
