"""The meter counts real boto3 calls against moto's server: requests, units, invocations."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

from takt.aws import AwsClients, make_clients
from takt.config import Settings
from takt.resources import EXECUTIONS
from takt_cli.metering import EMPTY_RECEIVE, OUTSIDE, Meter, MotoImages


@pytest.fixture
def metered(settings: Settings) -> Iterator[tuple[Meter, AwsClients, str]]:
    meter = Meter(MotoImages(settings.region))
    clients = make_clients(settings, meter=meter)
    yield meter, clients, settings.executions_table


def _item(sk: str, **extra: dict[str, str]) -> dict[str, dict[str, str]]:
    return {"job_key": {"S": "t#j"}, "sk": {"S": sk}, "payload_json": {"S": "x" * 1500}, **extra}


def test_a_put_into_a_sparse_index_costs_table_and_index_units(
    metered: tuple[Meter, AwsClients, str],
) -> None:
    meter, clients, table = metered
    clients.dynamodb.put_item(
        TableName=table, Item=_item("1", open_shard={"S": "0"}, check_at={"N": "5"})
    )
    usage = meter.usage()
    assert usage.calls[(OUTSIDE, "dynamodb", "PutItem")] == 1
    assert usage.write_units[(OUTSIDE, table, "", "PutItem")] == 2  # 1.5 KB
    # The `open` index projects its keys and two small attributes, not the 1.5 KB payload.
    assert usage.write_units[(OUTSIDE, table, "open", "PutItem")] == 1


def test_a_failed_condition_still_costs_the_existing_items_units(
    metered: tuple[Meter, AwsClients, str],
) -> None:
    meter, clients, table = metered
    clients.dynamodb.put_item(TableName=table, Item=_item("1"))
    before = meter.usage()
    with pytest.raises(ClientError):
        clients.dynamodb.put_item(
            TableName=table, Item=_item("1"), ConditionExpression="attribute_not_exists(sk)"
        )
    spent = meter.usage() - before
    assert spent.write_units[(OUTSIDE, table, "", "PutItem")] == 2
    assert spent.errors[("dynamodb", "PutItem", "ConditionalCheckFailedException")] == 1


def test_an_update_is_billed_by_the_larger_image(metered: tuple[Meter, AwsClients, str]) -> None:
    meter, clients, table = metered
    clients.dynamodb.put_item(TableName=table, Item=_item("1"))
    before = meter.usage()
    clients.dynamodb.update_item(
        TableName=table,
        Key={"job_key": {"S": "t#j"}, "sk": {"S": "1"}},
        UpdateExpression="REMOVE payload_json",
    )
    spent = meter.usage() - before
    assert spent.write_units[(OUTSIDE, table, "", "UpdateItem")] == 2


def test_reads_follow_consistency(metered: tuple[Meter, AwsClients, str]) -> None:
    meter, clients, table = metered
    key = {"job_key": {"S": "t#j"}, "sk": {"S": "none"}}
    clients.dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)
    clients.dynamodb.get_item(TableName=table, Key=key)
    assert meter.usage().total_read_units() == 1.5


def test_calls_are_attributed_to_the_invocation_they_ran_in(
    metered: tuple[Meter, AwsClients, str],
) -> None:
    meter, clients, table = metered

    def work() -> None:
        with meter.invocation("claimer") as invocation:
            clients.dynamodb.put_item(TableName=table, Item=_item("2"))
            invocation.function = "renamed"

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = meter.usage()
    assert usage.calls[("renamed", "dynamodb", "PutItem")] == 4
    assert usage.invocations["renamed"].count == 4
    assert "claimer" not in usage.invocations


def test_calls_of_helper_threads_in_the_invocations_context_count_under_it(
    metered: tuple[Meter, AwsClients, str],
) -> None:
    meter, clients, table = metered

    def put(sk: str) -> None:
        clients.dynamodb.put_item(TableName=table, Item=_item(sk))

    with (
        meter.invocation("claimer") as invocation,
        ThreadPoolExecutor(max_workers=4) as pool,
    ):
        futures = [pool.submit(contextvars.copy_context().run, put, sk) for sk in "3456"]
        for future in futures:
            future.result()
        invocation.helper_cpu_sec = 2.0
    # A thread that did not inherit the context is outside it, as before.
    outside = threading.Thread(target=put, args=("7",))
    outside.start()
    outside.join()
    usage = meter.usage()
    assert usage.calls[("claimer", "dynamodb", "PutItem")] == 4
    assert usage.calls[(OUTSIDE, "dynamodb", "PutItem")] == 1
    assert usage.invocations["claimer"].cpu_sec >= 2.0
    assert usage.invocations["claimer"].count == 1


def test_settle_waits_for_the_invocations_open_when_it_is_called(
    metered: tuple[Meter, AwsClients, str],
) -> None:
    meter = metered[0]
    entered, release = threading.Event(), threading.Event()

    def claim() -> None:
        with meter.invocation("claimer"):
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=claim)
    thread.start()
    entered.wait(10)
    assert meter.settle(0.0) is False
    release.set()
    thread.join()
    assert meter.settle(0.0) is True
    assert meter.usage().invocations["claimer"].count == 1


def test_empty_receives_are_counted_apart(settings: Settings) -> None:
    meter = Meter()
    clients = make_clients(settings, meter=meter)
    url = settings.lane_url("default")
    clients.sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    clients.sqs.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": "m"} for i in range(3)]
    )
    usage = meter.usage()
    assert usage.sqs_requests[(OUTSIDE, EMPTY_RECEIVE)] == 1
    assert usage.sqs_requests[(OUTSIDE, "SendMessageBatch")] == 1
    assert usage.total_sqs_requests(include_empty_receives=False) == 1


def test_the_executions_spec_is_what_the_images_see(settings: Settings) -> None:
    shape = MotoImages(settings.region).shape(settings.executions_table)
    assert shape is not None
    assert shape.partition == EXECUTIONS.partition.name
    assert {index.name for index in shape.indexes} == {i.name for i in EXECUTIONS.indexes}


def test_only_keeps_the_named_functions_and_relabelled_moves_one_functions_operations(
    metered: tuple[Meter, AwsClients, str],
) -> None:
    meter, clients, table = metered
    key = {"job_key": {"S": "t#j"}, "sk": {"S": "3"}}
    with meter.invocation("watchdog"):
        clients.dynamodb.put_item(TableName=table, Item=_item("3"))
        clients.dynamodb.delete_item(TableName=table, Key=key)
    with meter.invocation("claimer"):
        clients.dynamodb.delete_item(TableName=table, Key=key)
    usage = meter.usage()

    moved = usage.relabelled("watchdog", frozenset({"DeleteItem"}), "watch-check")
    assert moved.calls[("watch-check", "dynamodb", "DeleteItem")] == 1
    assert moved.calls[("watchdog", "dynamodb", "PutItem")] == 1
    assert moved.calls[("claimer", "dynamodb", "DeleteItem")] == 1
    assert ("watchdog", "dynamodb", "DeleteItem") not in moved.calls
    assert moved.write_units[("watch-check", table, "", "DeleteItem")] == 2  # the 1.5 KB item
    assert moved.invocations == usage.invocations

    kept = moved.only(("watch-check",))
    assert dict(kept.calls) == {("watch-check", "dynamodb", "DeleteItem"): 1}
    assert set(kept.write_units) == {("watch-check", table, "", "DeleteItem")}
    assert kept.invocations == {}
    assert usage.only(("claimer",)).invocations.keys() == {"claimer"}
