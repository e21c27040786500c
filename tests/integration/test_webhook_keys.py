"""Per-tenant webhook signing keys on the real worker path: each tenant's requests carry its own
key's signature, which another tenant's receiver (a real loopback server verifying with its own
key) refuses; a rotation signs with both keys for its overlap; the API shows and rotates them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from takt.clock import ManualClock
from takt.models.records import ExecState
from takt.models.targets import HttpSpec
from takt.store.webhook_keys import KeyState, KeyStates
from takt.tenants.webhook_keys import WebhookKey, WebhookKeyError, derive, master_bytes, verify
from takt.wiring import Services, install
from takt_cli.local.runtime import _local_master
from tests.api.harness import OTHER_TENANT, Api
from tests.integration.worker.conftest import runner_for, submit_to
from tests.support.env import ServicesFactory
from tests.support.jobs import TENANT

MASTER = "whsec_" + "bWFzdGVyLXNlY3JldC1vZi10aGUtZGVwbG95bWVudA=="


class VerifyingReceiver:
    """A tenant's webhook receiver on 127.0.0.1: 204 when a signature verifies with one of its
    keys, 401 otherwise, as a receiver following Standard Webhooks does."""

    def __init__(self, keys: list[str]) -> None:
        self.keys = keys
        self.answers: list[int] = []
        self.signatures: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                signatures = self.headers.get("webhook-signature", "")
                ok = verify(
                    receiver.keys,
                    self.headers.get("webhook-id", ""),
                    self.headers.get("webhook-timestamp", ""),
                    body,
                    signatures,
                )
                status = 204 if ok else 401
                receiver.answers.append(status)
                receiver.signatures.append(signatures)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def signed(make_svc: ServicesFactory) -> Services:
    return make_svc(signing_secret=MASTER)


@pytest.fixture
def receivers() -> Iterator[list[VerifyingReceiver]]:
    opened: list[VerifyingReceiver] = []
    yield opened
    for receiver in opened:
        receiver.close()


def receiver_of(opened: list[VerifyingReceiver], svc: Services, tenant: str) -> VerifyingReceiver:
    keys = [key.secret for key in svc.webhook_keys.keys(tenant, svc.clock.now())]
    receiver = VerifyingReceiver(keys)
    opened.append(receiver)
    return receiver


def call_as(svc: Services, clock: ManualClock, tenant: str, url: str) -> ExecState:
    record, message = submit_to(svc, clock, HttpSpec(url).text(), tenant_id=tenant)
    runner_for(svc).process(message)
    return svc.executions.get(tenant, record.execution_id).state


def test_each_tenants_key_is_derived_apart_from_the_master_and_the_others() -> None:
    master = master_bytes(MASTER)
    mine, theirs, next_mine = (
        derive(master, TENANT, 0),
        derive(master, OTHER_TENANT, 0),
        derive(master, TENANT, 1),
    )

    assert len({mine, theirs, next_mine, MASTER}) == 4
    assert derive(master, TENANT, 0) == mine
    assert mine.startswith("whsec_")


def test_a_tenants_receiver_accepts_its_own_signature_and_refuses_another_tenants(
    signed: Services, clock: ManualClock, receivers: list[VerifyingReceiver]
) -> None:
    receiver = receiver_of(receivers, signed, TENANT)

    own = call_as(signed, clock, TENANT, receiver.url)
    forged = call_as(signed, clock, OTHER_TENANT, receiver.url)

    assert receiver.answers == [204, 401]
    assert (own, forged) == (ExecState.SUCCEEDED, ExecState.FAILED)


def test_a_rotation_signs_with_both_keys_for_its_overlap_then_only_the_new_one(
    signed: Services, clock: ManualClock, receivers: list[VerifyingReceiver]
) -> None:
    old = receiver_of(receivers, signed, TENANT)
    keys = signed.webhook_keys.rotate(TENANT, clock.now(), timedelta(hours=1))
    new = receiver_of(receivers, signed, TENANT)
    new.keys = [keys[0].secret]

    during = [call_as(signed, clock, TENANT, r.url) for r in (old, new)]
    clock.advance(3661)
    after = [call_as(signed, clock, TENANT, r.url) for r in (old, new)]

    assert [k.generation for k in keys] == [1, 0]
    assert keys[1].valid_until == clock.now() - timedelta(seconds=61)
    assert len(old.signatures[0].split(" ")) == 2
    assert during == [ExecState.SUCCEEDED, ExecState.SUCCEEDED]
    assert (old.answers, new.answers) == ([204, 401], [204, 204])
    assert after[1] == ExecState.SUCCEEDED


def test_a_deployment_without_a_master_secret_sends_no_signature(
    svc: Services, clock: ManualClock, receivers: list[VerifyingReceiver]
) -> None:
    receiver = VerifyingReceiver([])
    receivers.append(receiver)

    call_as(svc, clock, TENANT, receiver.url)

    assert receiver.signatures == [""]


def test_the_api_shows_a_tenants_keys_and_rotates_them_for_itself_or_an_admin(
    signed: Services,
) -> None:
    install(signed)
    try:
        api = Api(signed)
        shown = api.request("GET", "/v1/webhook-keys")
        reader = api.request("GET", "/v1/webhook-keys", role="read")
        stranger = api.request("GET", "/v1/webhook-keys", headers={"Takt-Tenant": OTHER_TENANT})
        rotated = api.request(
            "POST",
            "/v1/webhook-keys/rotate",
            {"overlap_sec": 600},
            headers={"Takt-Tenant": TENANT},
            tenant="ops",
            role="admin",
        )
        bad = api.request("POST", "/v1/webhook-keys/rotate", {"overlap_sec": "600"})
    finally:
        install(None)

    master = master_bytes(MASTER)
    assert shown.status == 200
    assert shown.json == {
        "tenant": TENANT,
        "keys": [{"generation": 0, "secret": derive(master, TENANT, 0), "valid_until": None}],
    }
    assert (reader.status, stranger.status) == (403, 403)
    assert rotated.status == 200
    assert [k["secret"] for k in rotated.json["keys"]] == [
        derive(master, TENANT, 1),
        derive(master, TENANT, 0),
    ]
    assert bad.status == 400
    assert bad.json["errors"][0]["field"] == "overlap_sec"


def test_takt_local_keeps_its_master_in_its_data_folder_for_the_owner_only(
    tmp_path: Path,
) -> None:
    first, again = _local_master(tmp_path), _local_master(tmp_path)

    assert first == again
    assert master_bytes(first) != master_bytes(_local_master(None))
    assert (tmp_path / "webhook-master").stat().st_mode & 0o777 == 0o600


def test_a_rotation_that_loses_the_race_is_refused_409_and_does_not_move_the_key_again(
    signed: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_advance = KeyStates.advance
    raced: list[bool] = []

    def advance_after_a_rival(
        states: KeyStates, tenant_id: str, state: KeyState, until_ms: int
    ) -> bool:
        if not raced:
            # Another rotation that read the same generation commits between this one's read
            # and its write.
            raced.append(real_advance(states, tenant_id, state, until_ms))
        return real_advance(states, tenant_id, state, until_ms)

    monkeypatch.setattr(KeyStates, "advance", advance_after_a_rival)
    install(signed)
    try:
        lost = Api(signed).request("POST", "/v1/webhook-keys/rotate", {"overlap_sec": 60})
    finally:
        install(None)
    stored = KeyStates(signed.clients.dynamodb, signed.settings.tenants_table).read(TENANT)
    assert raced == [True]
    assert (lost.status, stored.generation) == (409, 1), (
        "racing rotations cannot both move the key on (docs/SECURITY.md): the one that lost "
        f"answered {lost.status} and left generation {stored.generation}"
    )
    assert "rotated by another request meanwhile" in lost.json["detail"]


def test_ten_racing_rotations_move_the_key_once_per_success_and_each_is_told_what_it_wrote(
    signed: Services,
) -> None:
    keys = signed.webhook_keys
    now = signed.clock.now()
    start = threading.Barrier(10)

    def rotate(i: int) -> list[WebhookKey] | str:
        start.wait()
        try:
            return keys.rotate(TENANT, now, timedelta(seconds=100 + i))
        except WebhookKeyError as exc:
            return str(exc)

    # Real concurrency: each rotation's read and conditional write go to moto's server.
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(rotate, range(10)))
    won = {i: a for i, a in enumerate(answers) if not isinstance(a, str)}
    lost = [a for a in answers if isinstance(a, str)]
    stored = KeyStates(signed.clients.dynamodb, signed.settings.tenants_table).read(TENANT)
    rule = "racing rotations cannot both move the key on (docs/SECURITY.md)"
    assert stored.generation == len(won), f"{rule}: {len(won)} won, generation {stored.generation}"
    assert sorted(a[0].generation for a in won.values()) == list(range(1, len(won) + 1)), rule
    for i, answer in won.items():
        # Each winner is told the key it made current and the one it replaced, for its overlap.
        assert [k.generation for k in answer] == [answer[0].generation, answer[0].generation - 1]
        assert answer[1].valid_until == now + timedelta(seconds=100 + i), rule
    assert all("rotated by another request meanwhile" in text for text in lost), lost
