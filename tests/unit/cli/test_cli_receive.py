"""`takt receive` as a process: it answers a correctly signed call with --status, refuses one it
cannot verify with 401, and prints a line for each."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import urllib3

from takt.targets.http import sign
from takt_cli.local.runtime import free_port

KEY = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER_KEY = "whsec_" + base64.b64encode(b"o" * 32).decode()
BODY = b'{"hello":"world"}'


@pytest.fixture
def receiver() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "takt_cli.commands.main", "receive"),
            *("--port", str(port), "--status", "503", "--secret", KEY),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    banner = process.stderr.readline()
    assert banner.startswith(f"takt receive on http://127.0.0.1:{port}/"), banner
    try:
        yield f"http://127.0.0.1:{port}", process
    finally:
        process.terminate()
        process.wait(timeout=10)


def post(url: str, key: str | None) -> int:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        stamp = int(time.time())
        headers |= {
            "webhook-id": "msg_1",
            "webhook-timestamp": str(stamp),
            "webhook-signature": sign(key, "msg_1", stamp, BODY),
        }
    return urllib3.request("POST", url + "/job", body=BODY, headers=headers, timeout=60).status


def test_a_verified_call_gets_the_chosen_status_and_others_401(
    receiver: tuple[str, subprocess.Popen[str]],
) -> None:
    url, process = receiver

    statuses = [post(url, KEY), post(url, OTHER_KEY), post(url, None)]
    process.terminate()
    out, _ = process.communicate(timeout=10)

    assert statuses == [503, 401, 401]
    calls = [line for line in out.splitlines() if line.startswith("20")]
    assert [c.split(" ", 1)[1] for c in calls] == [
        "POST /job -> 503, signature ok",
        "POST /job -> 401, signature INVALID: signature does not match the keys",
        "POST /job -> 401, signature INVALID: unsigned (no webhook-id, webhook-timestamp or "
        "webhook-signature)",
    ]
    assert out.count('  body: {"hello":"world"}') == 3
