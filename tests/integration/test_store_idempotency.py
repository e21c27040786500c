"""Idempotency records for job creation (DESIGN invariant 6)."""

from __future__ import annotations

from takt.store.idempotency import IdempotencyRecord
from takt.wiring import Services
from tests.support.jobs import TENANT

NOW = 1_772_452_800  # 2026-03-02T12:00:00Z


def test_the_first_claim_of_a_key_wins(svc: Services) -> None:
    assert svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW) is None


def test_a_second_claim_returns_the_earlier_record(svc: Services) -> None:
    svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW)

    earlier = svc.idempotency.claim(TENANT, "key-1", "job_b", "hash-b", NOW + 5)

    assert earlier == IdempotencyRecord(job_id="job_a", body_hash="hash-a")


def test_keys_are_per_tenant(svc: Services) -> None:
    svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW)

    assert svc.idempotency.claim("tenant-b", "key-1", "job_b", "hash-b", NOW) is None


def test_an_expired_record_counts_as_absent_before_ttl_removes_it(svc: Services) -> None:
    retention = int(svc.settings.idempotency_retention_days * 24 * 3600)
    svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW)

    assert svc.idempotency.claim(TENANT, "key-1", "job_b", "hash-b", NOW + retention + 1) is None
    earlier = svc.idempotency.claim(TENANT, "key-1", "job_c", "hash-c", NOW + retention + 2)
    assert earlier == IdempotencyRecord(job_id="job_b", body_hash="hash-b")


def test_find_returns_the_claimed_record(svc: Services) -> None:
    svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW)

    assert svc.idempotency.find(TENANT, "key-1", NOW + 5) == IdempotencyRecord("job_a", "hash-a")


def test_find_of_an_unused_key_is_none_and_leaves_the_key_free(svc: Services) -> None:
    assert svc.idempotency.find(TENANT, "key-1", NOW) is None
    assert svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW) is None


def test_find_treats_an_expired_record_as_absent_as_claim_does(svc: Services) -> None:
    retention = int(svc.settings.idempotency_retention_days * 24 * 3600)
    svc.idempotency.claim(TENANT, "key-1", "job_a", "hash-a", NOW)

    assert svc.idempotency.find(TENANT, "key-1", NOW + retention) is not None
    assert svc.idempotency.find(TENANT, "key-1", NOW + retention + 1) is None
