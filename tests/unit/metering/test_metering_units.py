"""AWS's billing rules as the meter applies them: item sizes, units, index writes, SQS chunks."""

from __future__ import annotations

from takt_cli.metering.units import (
    IndexShape,
    TableShape,
    index_write_units,
    item_size,
    read_units,
    sqs_billed_requests,
    value_size,
    write_units,
)

EXECUTIONS = TableShape(
    partition="job_key",
    sort="sk",
    indexes=(IndexShape("open", "open_shard", "check_at"),),
)


def test_string_and_name_bytes_add_up() -> None:
    assert item_size({"ab": {"S": "xyz"}}) == 5
    assert item_size({"é": {"S": "é"}}) == 4  # UTF-8: two bytes each


def test_numbers_cost_one_byte_per_two_significant_digits_plus_one() -> None:
    assert value_size({"N": "1"}) == 2
    assert value_size({"N": "12345"}) == 4
    assert value_size({"N": "1000"}) == 2  # trailing zeros are not significant


def test_lists_and_maps_carry_three_bytes_and_one_per_element() -> None:
    assert value_size({"L": [{"S": "a"}, {"BOOL": True}]}) == 3 + (1 + 1) + (1 + 1)
    assert value_size({"M": {"k": {"NULL": True}}}) == 3 + 1 + 1 + 1


def test_write_units_round_up_per_kilobyte_with_a_minimum_of_one() -> None:
    assert write_units(0) == 1
    assert write_units(1024) == 1
    assert write_units(1025) == 2


def test_read_units_round_up_per_4_kb_and_halve_when_eventually_consistent() -> None:
    assert read_units(0, consistent=True) == 1.0
    assert read_units(4097, consistent=True) == 2.0
    assert read_units(100, consistent=False) == 0.5


def test_sqs_bills_one_request_per_started_64_kb() -> None:
    assert sqs_billed_requests(10) == 1
    assert sqs_billed_requests(64 * 1024 + 1) == 2


def _execution(**extra: dict[str, str]) -> dict[str, dict[str, str]]:
    return {"job_key": {"S": "t#j"}, "sk": {"S": "1"}, **extra}


def test_entering_a_sparse_index_is_one_write_of_the_projected_item() -> None:
    new = _execution(open_shard={"S": "3"}, check_at={"N": "10"})
    assert index_write_units(EXECUTIONS, _execution(), new) == {"open": 1}


def test_changing_the_index_sort_key_deletes_and_puts_the_entry() -> None:
    old = _execution(open_shard={"S": "3"}, check_at={"N": "10"})
    new = _execution(open_shard={"S": "3"}, check_at={"N": "20"})
    assert index_write_units(EXECUTIONS, old, new) == {"open": 2}


def test_leaving_the_index_is_one_write_and_an_untouched_entry_none() -> None:
    inside = _execution(open_shard={"S": "3"}, check_at={"N": "10"})
    assert index_write_units(EXECUTIONS, inside, _execution()) == {"open": 1}
    assert index_write_units(EXECUTIONS, _execution(), _execution(state={"S": "x"})) == {}


def test_a_keys_only_index_ignores_changes_to_other_attributes() -> None:
    shape = TableShape(
        "job_key", "sk", (IndexShape("open", "open_shard", "check_at", "KEYS_ONLY"),)
    )
    old = _execution(open_shard={"S": "3"}, check_at={"N": "10"}, state={"S": "pending"})
    new = {**old, "state": {"S": "running"}}
    assert index_write_units(shape, old, new) == {}
    assert index_write_units(EXECUTIONS, old, new) == {"open": 1}
