"""A claim's budget shared between tenants by weight (`fair_take`)."""

from __future__ import annotations

from takt.fairness.shares import fair_take


def _tenant(item: str) -> str:
    return item.split("-", maxsplit=1)[0]


def test_everything_is_taken_when_it_fits_the_budget() -> None:
    items = ["a-1", "b-1", "a-2"]
    assert fair_take(items, 3, _tenant, lambda _: 1) == (items, [])


def test_a_flood_ahead_in_due_order_leaves_room_for_a_quiet_tenant() -> None:
    items = [f"a-{i}" for i in range(1000)] + ["b-1", "b-2"]
    taken, left = fair_take(items, 10, _tenant, lambda _: 1)
    assert len(taken) == 10
    assert {"b-1", "b-2"} <= set(taken)
    assert taken[:8] == [f"a-{i}" for i in range(8)]  # the flood's oldest first
    assert len(left) == 992


def test_a_tenant_alone_takes_the_whole_budget() -> None:
    items = [f"a-{i}" for i in range(100)]
    taken, left = fair_take(items, 40, _tenant, lambda _: 1)
    assert taken == items[:40]
    assert left == items[40:]


def test_shares_follow_the_weights_while_both_have_items() -> None:
    items = [f"a-{i}" for i in range(100)] + [f"b-{i}" for i in range(100)]
    taken, _ = fair_take(items, 30, _tenant, lambda tenant: 2 if tenant == "b" else 1)
    assert sum(1 for t in taken if t.startswith("b")) == 20
    assert sum(1 for t in taken if t.startswith("a")) == 10


def test_a_quiet_tenant_goes_first_even_when_the_budget_is_one_item() -> None:
    items = [f"a-{i}" for i in range(50)] + ["b-1"]
    taken, _ = fair_take(items, 1, _tenant, lambda _: 1)
    assert taken == ["b-1"]
