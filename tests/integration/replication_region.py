"""One region's process for tests/integration/test_local_replication.py: a moto server stamped
as a replica, one table with a stream, and the replicator reading the peers. A module of its own
so that the spawned process imports moto and the replicator only, not the test's harness."""

from __future__ import annotations

import os
import threading
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from takt_cli.local.replication import MotoReplica, Replicator, moto_backend

DELAY_MS = 300
TABLE = "replicated"


def serve_region(region: str, port: int, peers: dict[str, str], ready: Any, stop: Any) -> None:
    """A region's process: moto stamped as a replica, one table with a stream, the replicator."""
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    replica = MotoReplica(region)
    replica.install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    boto3.session.Session(region_name=region).client(
        "dynamodb", endpoint_url=f"http://127.0.0.1:{port}"
    ).create_table(
        TableName=TABLE,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )
    replicator = Replicator(replica, moto_backend(region), peers, [TABLE], DELAY_MS)
    halt = threading.Event()
    threading.Thread(target=replicator.run, args=(halt,), daemon=True).start()
    ready.set()
    stop.wait()
    halt.set()
    server.stop()
