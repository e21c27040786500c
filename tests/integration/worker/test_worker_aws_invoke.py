"""Lambda and Step Functions targets.

What runs where, because moto's Lambda runs functions only in Docker, which this machine lacks:

- on moto's server (Lambda in its Docker-free mode, which answers every invocation with the event
  it was sent, and never with a function error): the runner's path end to end, both invocation
  types (200 for `RequestResponse`, 202 for `Event`, recorded on the execution), and Step
  Functions' `StartExecution` (name, input, a retried start of one attempt, a new attempt);
- on a loopback HTTP server speaking Lambda's Invoke API (the Lambda client's `endpoint_url`
  pointed at it): the request's exact shape (path, invocation type, the envelope), a function
  error, throttling, a missing function, and a read timeout that is not retried.
"""

from __future__ import annotations

import io
import json
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest

from takt.aws import make_lambda_client
from takt.clock import ManualClock
from takt.config import Settings
from takt.models.calls import CallContext
from takt.models.ids import format_time
from takt.models.records import ExecState
from takt.models.targets import LambdaSpec
from takt.targets.invoke import AwsInvokeTarget, state_machine_execution_name
from takt.wiring import Services
from tests.integration.worker.conftest import NOON, runner_for, stored, submit_to
from tests.support.receiver import Receiver, Reply

ACCOUNT = "123456789012"


def _client(endpoint: str, service: str) -> Any:
    session: Any = boto3.session.Session(region_name="us-east-1")
    return session.client(service, endpoint_url=endpoint)


@pytest.fixture(scope="module")
def docker_free_lambda(moto_endpoint: str) -> str:
    """moto's server with Lambda's Docker-free backend (it echoes the event back)."""
    request = urllib.request.Request(
        f"{moto_endpoint}/moto-api/config",
        data=json.dumps({"lambda": {"use_docker": False}}).encode(),
        method="POST",
    )
    with urllib.request.urlopen(request) as answer:
        assert json.loads(answer.read())["lambda"]["use_docker"] is False
    return moto_endpoint


@pytest.fixture(scope="module")
def role(docker_free_lambda: str) -> str:
    iam = _client(docker_free_lambda, "iam")
    name = f"target-{uuid.uuid4().hex[:8]}"
    return str(iam.create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"])


@pytest.fixture
def function(docker_free_lambda: str, role: str) -> str:
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    created = _client(docker_free_lambda, "lambda").create_function(
        FunctionName=f"fn-{uuid.uuid4().hex[:8]}",
        Runtime="python3.13",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": code.getvalue()},
    )
    return str(created["FunctionArn"])


@pytest.fixture
def state_machine(docker_free_lambda: str, role: str) -> str:
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    created = _client(docker_free_lambda, "stepfunctions").create_state_machine(
        name=f"sm-{uuid.uuid4().hex[:8]}", definition=json.dumps(definition), roleArn=role
    )
    return str(created["stateMachineArn"])


def test_a_synchronous_lambda_target_succeeds_with_the_functions_answer(
    svc: Services, clock: ManualClock, function: str
) -> None:
    record, message = submit_to(svc, clock, function, {"report": "daily"})

    outcome = runner_for(svc).process(message)

    done = stored(svc, record)
    assert outcome.state == ExecState.SUCCEEDED.value
    assert done.attempts[-1].status_code == 200


def test_an_asynchronous_lambda_target_succeeds_on_lambdas_acceptance(
    svc: Services, clock: ManualClock, function: str
) -> None:
    target = json.dumps({"type": "lambda", "function": function, "invocation": "Event"})
    record, message = submit_to(svc, clock, target, {"report": "daily"})

    outcome = runner_for(svc).process(message)

    assert outcome.state == ExecState.SUCCEEDED.value
    assert stored(svc, record).attempts[-1].status_code == 202


def _executions(svc: Services, machine: str) -> list[dict[str, Any]]:
    client = _client(svc.settings.aws_endpoint_url or "", "stepfunctions")
    listed = client.list_executions(stateMachineArn=machine)["executions"]
    return [client.describe_execution(executionArn=e["executionArn"]) for e in listed]


def test_a_state_machine_starts_one_execution_per_attempt_named_from_it(
    svc: Services, clock: ManualClock, state_machine: str
) -> None:
    record, message = submit_to(svc, clock, state_machine, {"order": 7})

    outcome = runner_for(svc).process(message)

    [started] = _executions(svc, state_machine)
    assert outcome.state == ExecState.SUCCEEDED.value
    assert started["name"] == state_machine_execution_name(record.execution_id, 1)
    assert started["name"] == f"takt-{record.execution_id.replace('.', '_')}-1"
    assert json.loads(started["input"]) == {
        "job_id": record.job_id,
        "execution_id": record.execution_id,
        "attempt": 1,
        "scheduled_time": format_time(NOON),
        "payload": {"order": 7},
    }


def test_a_retried_start_of_one_attempt_is_the_same_execution_and_a_new_attempt_is_new(
    svc: Services, clock: ManualClock, state_machine: str
) -> None:
    record, message = submit_to(svc, clock, state_machine, {"order": 7})
    runner_for(svc).process(message)

    def attempt(number: int) -> CallContext:
        return CallContext(
            job_id=record.job_id,
            execution_id=record.execution_id,
            attempt=number,
            scheduled_time=NOON,
            payload={"order": 7},
            timeout_sec=10,
        )

    again = svc.targets.call(state_machine, attempt(1))
    names_after_retry = sorted(e["name"] for e in _executions(svc, state_machine))
    second = svc.targets.call(state_machine, attempt(2))

    assert again.outcome == second.outcome == "success"
    assert names_after_retry == [state_machine_execution_name(record.execution_id, 1)]
    assert len(_executions(svc, state_machine)) == 2


def test_a_long_execution_id_still_gives_a_valid_name() -> None:
    name = state_machine_execution_name("job_" + "x" * 120 + ".20260302T120000000Z", 3)

    assert len(name) <= 80
    assert name.startswith("takt-") and name.endswith("-3")


# Lambda's Invoke API on loopback: what moto cannot answer.


@pytest.fixture
def lambda_api() -> Iterator[Receiver]:
    with Receiver(Reply(status=200, body=b'{"ok":true}')) as running:
        yield running


def loopback_invoker(receiver: Receiver) -> AwsInvokeTarget:
    settings = Settings(aws_endpoint_url=receiver.url.removesuffix("/hook"))
    return AwsInvokeTarget(
        lambda timeout: make_lambda_client(settings, timeout),
        lambda: None,
        "us-east-1",
    )


def call_ctx(timeout_sec: float = 10) -> CallContext:
    return CallContext(
        job_id="job_1",
        execution_id="job_1.20260302T120000000Z",
        attempt=1,
        scheduled_time=datetime(2026, 3, 2, 12, tzinfo=UTC),
        payload={"report": "daily"},
        timeout_sec=timeout_sec,
    )


FUNCTION = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:report"


def _lambda(invocation: str = "RequestResponse") -> LambdaSpec:
    return LambdaSpec(FUNCTION, "us-east-1", invocation)


@pytest.mark.parametrize("invocation", ["RequestResponse", "Event"])
def test_the_invoke_request_names_the_function_the_invocation_type_and_sends_the_envelope(
    lambda_api: Receiver, invocation: str
) -> None:
    lambda_api.script(Reply(status=200 if invocation == "RequestResponse" else 202, body=b""))

    result = loopback_invoker(lambda_api).call(_lambda(invocation), call_ctx())

    [call] = lambda_api.calls
    assert result.outcome == "success"
    assert call.path == f"/2015-03-31/functions/{FUNCTION.replace(':', '%3A')}/invocations"
    assert call.header("X-Amz-Invocation-Type") == invocation
    assert json.loads(call.body) == {
        "job_id": "job_1",
        "execution_id": "job_1.20260302T120000000Z",
        "attempt": 1,
        "scheduled_time": "2026-03-02T12:00:00Z",
        "payload": {"report": "daily"},
    }


def test_a_function_error_is_a_retryable_failed_attempt_naming_the_error(
    lambda_api: Receiver,
) -> None:
    lambda_api.script(
        Reply(
            status=200,
            headers={"X-Amz-Function-Error": "Unhandled"},
            body=b'{"errorType":"ValueError","errorMessage":"no such report"}',
        )
    )

    result = loopback_invoker(lambda_api).call(_lambda(), call_ctx())

    assert (result.outcome, result.error) == (
        "retryable",
        "function error (Unhandled): ValueError: no such report",
    )


@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        (429, "TooManyRequestsException", "retryable"),
        (502, "ResourceNotReadyException", "retryable"),
        (404, "ResourceNotFoundException", "permanent"),
        (403, "AccessDeniedException", "permanent"),
    ],
)
def test_lambdas_refusals_are_retried_or_final_by_kind_and_never_retried_by_the_client(
    lambda_api: Receiver, status: int, code: str, outcome: str
) -> None:
    lambda_api.script(
        Reply(
            status=status,
            headers={"X-Amzn-ErrorType": code},
            body=json.dumps({"Type": "User", "message": "no"}).encode(),
        )
    )

    result = loopback_invoker(lambda_api).call(_lambda(), call_ctx())

    assert result.outcome == outcome
    assert (result.error or "").startswith(code)
    assert len(lambda_api.calls) == 1


def test_a_synchronous_call_that_outlasts_the_jobs_timeout_is_not_invoked_twice(
    lambda_api: Receiver,
) -> None:
    lambda_api.script(Reply(delay_sec=5))

    result = loopback_invoker(lambda_api).call(_lambda(), call_ctx(timeout_sec=0.5))

    assert result.outcome == "retryable"
    assert result.error == "connection failed: ReadTimeoutError"
    assert len(lambda_api.calls) == 1


def test_a_function_in_another_region_fails_without_a_call(lambda_api: Receiver) -> None:
    other = LambdaSpec(FUNCTION.replace("us-east-1", "eu-west-1"), "eu-west-1")

    result = loopback_invoker(lambda_api).call(other, call_ctx())

    assert result.outcome == "permanent"
    assert lambda_api.calls == []
