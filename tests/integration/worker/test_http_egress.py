"""HTTP targets through the egress policy, against real HTTP servers on 127.0.0.1.

Loopback is the only network here, so it stands in for both sides: a strict policy refuses it
like any private address, and a policy that allow-lists it (by network, or by host name for one
hop only) plays the public internet. Names resolve through an injected resolver.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from takt.clock import ManualClock
from takt.models.calls import CallContext
from takt.models.records import ExecState
from takt.models.targets import HttpSpec
from takt.targets.egress import EgressPolicy
from takt.targets.http import MAX_REDIRECTS, HttpTarget
from takt.wiring import Services, build_services
from tests.integration.worker.conftest import runner_for, stored, submit_to
from tests.support.jobs import TENANT
from tests.support.receiver import Receiver, Reply
from tests.support.threads import in_thread

LOOPBACK = ("127.0.0.0/8",)


class Secrets:
    """Secret values by name, as Secrets Manager would return them."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, name: str) -> str:
        return self.values[name]


class Names:
    """A resolver from a table, counting how often each name was asked; `then` changes a
    name's answer after its first lookup (DNS rebinding)."""

    def __init__(
        self, table: dict[str, list[str]], then: dict[str, list[str]] | None = None
    ) -> None:
        self.table = table
        self.then = then or {}
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        first = host not in self.asked
        self.asked.append(host)
        if not first and host in self.then:
            return self.then[host]
        if host not in self.table:
            raise OSError("Name or service not known")
        return self.table[host]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as r:
        yield r


def ctx(tenant_id: str = TENANT) -> CallContext:
    return CallContext(
        job_id="job-1",
        execution_id="ex-1",
        attempt=1,
        scheduled_time=datetime(2026, 3, 2, 12, tzinfo=UTC),
        payload={"n": 1},
        timeout_sec=5.0,
        tenant_id=tenant_id,
    )


def on(receiver: Receiver, host: str, path: str = "/hook") -> str:
    """The receiver's URL with another host name (resolved by the test's resolver)."""
    return f"http://{host}:{urlsplit(receiver.url).port}{path}"


def test_loopback_is_refused_by_the_default_policy_and_nothing_is_sent(
    receiver: Receiver,
) -> None:
    result = HttpTarget().call(HttpSpec(receiver.url), ctx())

    assert result.outcome == "permanent"
    assert result.error == "egress refused: 127.0.0.1 is loopback"
    assert receiver.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "http://169.254.170.2/v2/credentials",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
    ],
)
def test_the_metadata_and_credential_endpoints_are_refused_in_every_form(url: str) -> None:
    names = Names({})

    result = HttpTarget(EgressPolicy(LOOPBACK, names)).call(HttpSpec(url), ctx())

    assert result.outcome == "permanent"
    assert result.error is not None and result.error.startswith("egress refused: ")
    assert "link-local" in result.error or "private" in result.error
    assert names.asked == []


def test_a_name_that_resolves_to_a_private_address_is_refused(receiver: Receiver) -> None:
    names = Names({"evil.test": ["10.0.0.5"]})

    result = HttpTarget(EgressPolicy(resolver=names)).call(
        HttpSpec(on(receiver, "evil.test")), ctx()
    )

    assert result.outcome == "permanent"
    assert result.error == "egress refused: evil.test resolves to 10.0.0.5, which is private"
    assert receiver.calls == []


@pytest.mark.parametrize("host", ["[::1]", "[::ffff:127.0.0.1]", "127.1", "2130706433"])
def test_ipv6_and_short_forms_of_loopback_are_refused(receiver: Receiver, host: str) -> None:
    result = HttpTarget().call(HttpSpec(on(receiver, host)), ctx())

    assert result.outcome == "permanent"
    assert result.error is not None and "loopback" in result.error
    assert receiver.calls == []


def test_an_allow_listed_network_is_called(receiver: Receiver) -> None:
    result = HttpTarget(EgressPolicy(LOOPBACK)).call(HttpSpec(receiver.url), ctx())

    assert (result.outcome, result.status_code) == ("success", 200)
    assert len(receiver.calls) == 1


def test_a_refused_connection_is_reported_as_refused_not_as_a_timeout() -> None:
    with socket.socket() as bound:
        # Bound but never listening: connecting to it is refused at once.
        bound.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{bound.getsockname()[1]}/hook"

        result = HttpTarget(EgressPolicy(LOOPBACK)).call(HttpSpec(url), ctx())

    assert result.outcome == "retryable"
    assert result.error == "connection refused"


def test_an_allow_listed_host_name_is_called_with_its_host_header(receiver: Receiver) -> None:
    names = Names({"hooks.test": ["127.0.0.1"]})

    result = HttpTarget(EgressPolicy(["hooks.test"], names)).call(
        HttpSpec(on(receiver, "hooks.test")), ctx()
    )

    assert result.outcome == "success"
    (call,) = receiver.calls
    assert call.header("Host") == f"hooks.test:{urlsplit(receiver.url).port}"
    assert names.asked == ["hooks.test"]


def test_a_rebinding_name_is_resolved_once_and_the_connection_goes_to_the_vetted_address(
    receiver: Receiver,
) -> None:
    """The name answers an allowed address first and a private one after: the request is made
    to the first answer (its only lookup), and the next request sees the second and is
    refused. Had the socket resolved the name itself, the system resolver would not know
    `rebind.test` and the first request would have failed."""
    names = Names({"rebind.test": ["127.0.0.1"]}, then={"rebind.test": ["10.0.0.5"]})
    target = HttpTarget(EgressPolicy(["127.0.0.1/32"], names))
    spec = HttpSpec(on(receiver, "rebind.test"))

    first = target.call(spec, ctx())

    assert first.outcome == "success"
    assert names.asked == ["rebind.test"]
    assert [c.header("Host") for c in receiver.calls] == [urlsplit(spec.url).netloc]

    second = target.call(spec, ctx())

    assert second.outcome == "permanent"
    assert second.error is not None and "10.0.0.5, which is private" in second.error
    assert len(receiver.calls) == 1


def test_a_307_to_the_metadata_address_is_refused_after_the_allowed_first_hop(
    receiver: Receiver,
) -> None:
    names = Names({"hooks.test": ["127.0.0.1"]})
    receiver.script(
        Reply(307, {"Location": "http://169.254.169.254/latest/meta-data/iam/"}, body=b"")
    )

    result = HttpTarget(EgressPolicy(["hooks.test"], names)).call(
        HttpSpec(on(receiver, "hooks.test")), ctx()
    )

    assert result.outcome == "permanent"
    assert result.error == ("egress refused: 169.254.169.254 is link-local (after 1 redirects)")
    assert len(receiver.calls) == 1


def test_a_308_to_a_name_that_resolves_to_a_private_address_is_refused(
    receiver: Receiver,
) -> None:
    names = Names({"evil.test": ["192.168.0.10"]})
    receiver.script(Reply(308, {"Location": "http://evil.test/admin"}, body=b""))

    result = HttpTarget(EgressPolicy(LOOPBACK, names)).call(HttpSpec(receiver.url), ctx())

    assert result.outcome == "permanent"
    assert result.error is not None and "evil.test resolves to 192.168.0.10" in result.error
    assert names.asked == ["evil.test"]


def test_a_307_to_an_allowed_url_is_followed_with_the_same_post_and_body(
    receiver: Receiver,
) -> None:
    receiver.script(Reply(307, {"Location": "/moved?x=1"}, body=b""))
    target = HttpTarget(EgressPolicy(LOOPBACK), Secrets({"takt/tenant-a/token": "t0k"}))

    result = target.call(HttpSpec(receiver.url, bearer_secret="takt/tenant-a/token"), ctx())

    assert (result.outcome, result.status_code) == ("success", 200)
    first, second = receiver.calls
    assert (first.path, second.path) == ("/hook", "/moved?x=1")
    assert second.body == first.body == b'{"n":1}'
    assert second.header("Authorization") == "Bearer t0k"


def test_a_redirect_to_another_origin_drops_the_credentials_from_secrets(
    receiver: Receiver,
) -> None:
    names = Names({"elsewhere.test": ["127.0.0.1"]})
    receiver.script(Reply(307, {"Location": on(receiver, "elsewhere.test", "/x")}, body=b""))
    secrets = Secrets({"takt/tenant-a/token": "t0k", "takt/tenant-a/hdrs": '{"X-Api-Key": "k"}'})
    target = HttpTarget(EgressPolicy([*LOOPBACK, "elsewhere.test"], names), secrets)
    spec = HttpSpec(
        receiver.url, bearer_secret="takt/tenant-a/token", headers_secret="takt/tenant-a/hdrs"
    )

    result = target.call(spec, ctx())

    assert result.outcome == "success"
    first, second = receiver.calls
    assert (first.header("Authorization"), first.header("X-Api-Key")) == ("Bearer t0k", "k")
    assert (second.header("Authorization"), second.header("X-Api-Key")) == (None, None)
    assert second.header("Takt-Execution-Id") == "ex-1"


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_would_turn_the_post_into_a_get_is_not_followed(
    receiver: Receiver, status: int
) -> None:
    receiver.script(Reply(status, {"Location": "/elsewhere"}, body=b""))

    result = HttpTarget(EgressPolicy(LOOPBACK)).call(HttpSpec(receiver.url), ctx())

    assert (result.outcome, result.status_code) == ("permanent", status)
    assert result.error == f"HTTP {status} (only 307 and 308 redirects are followed)"
    assert len(receiver.calls) == 1


def test_redirects_stop_after_the_maximum(receiver: Receiver) -> None:
    receiver.script(Reply(307, {"Location": "/again"}, body=b""), times=MAX_REDIRECTS + 1)

    result = HttpTarget(EgressPolicy(LOOPBACK)).call(HttpSpec(receiver.url), ctx())

    assert result.outcome == "permanent"
    assert result.error == f"more than {MAX_REDIRECTS} redirects"
    assert len(receiver.calls) == MAX_REDIRECTS + 1


def test_a_call_told_to_stop_does_not_follow_a_redirect_that_comes_after(
    receiver: Receiver,
) -> None:
    answered = threading.Event()
    receiver.script(Reply(307, {"Location": "/elsewhere"}, gate=answered, body=b""))
    call = ctx()
    thread, results = in_thread(
        lambda: HttpTarget(EgressPolicy(LOOPBACK)).call(HttpSpec(receiver.url), call)
    )
    receiver.wait_for_calls(1)

    call.stop.set("lease_lost")  # the worker's lease expired on its clock while the call ran
    answered.set()
    thread.join(timeout=10)

    [result] = results
    assert (result.outcome, result.error) == (
        "retryable",
        "stopped (lease_lost) before following a redirect",
    )
    assert [c.path for c in receiver.calls] == ["/hook"]


def test_a_refused_execution_fails_at_once_with_the_reason_and_is_not_retried(
    svc: Services, clock: ManualClock, receiver: Receiver
) -> None:
    strict = build_services(svc.settings.model_copy(update={"egress_allow": ()}), clock)
    record, message = submit_to(strict, clock, receiver.url)

    outcome = runner_for(strict).process(message)

    after = stored(strict, record)
    assert (outcome.state, after.state) == ("failed", ExecState.FAILED)
    assert after.error == "egress refused: 127.0.0.1 is loopback"
    assert [a.outcome for a in after.attempts] == ["failed"]
    assert after.retry_at is None
    assert receiver.calls == []
