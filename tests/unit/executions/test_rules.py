"""The lifecycle's rules, as pure functions of the execution, the clock and the settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from takt.executions import rules
from takt.models.ids import to_ms
from takt.models.records import Attempt, ExecState, ExecutionRecord

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _record(**fields: object) -> ExecutionRecord:
    base: dict[str, object] = {
        "tenant_id": "t1",
        "job_id": "job_1",
        "execution_id": "job_1.20260302T120000000Z",
        "scheduled_time": NOON,
        "state": ExecState.RUNNING,
        "target": "https://example.com/hook",
        "created_at": NOON,
    }
    return ExecutionRecord.model_validate({**base, **fields})


def test_check_at_is_the_resend_wait_after_the_message_can_first_be_taken() -> None:
    assert rules.check_at(NOON, 30) == to_ms(NOON + timedelta(seconds=30))
    assert rules.check_at(NOON, 30, delay_sec=5) == to_ms(NOON + timedelta(seconds=35))


def test_a_lease_moves_check_at_only_when_it_is_shorter_than_the_resend_wait() -> None:
    assert rules.lease_moves_check_at(10, 30)
    assert not rules.lease_moves_check_at(30, 30)
    assert not rules.lease_moves_check_at(60, 30)


def test_a_retry_within_sqs_delay_is_sent_now_and_checked_a_resend_wait_after_it_is_due() -> None:
    plan = rules.retry_plan(NOON, timedelta(seconds=12.5), 30)

    assert plan.retry_at == NOON + timedelta(seconds=12.5)
    assert plan.send_delay_sec == 13, (
        "a retry's message is delayed the backoff rounded up, never less"
    )
    assert plan.check_at == to_ms(NOON + timedelta(seconds=42.5))


def test_a_retry_beyond_sqs_delay_waits_in_the_table_for_the_watchdog() -> None:
    plan = rules.retry_plan(NOON, timedelta(seconds=rules.MAX_SQS_DELAY_SEC + 1), 30)

    assert plan.send_delay_sec is None
    assert plan.check_at == to_ms(NOON + timedelta(seconds=rules.MAX_SQS_DELAY_SEC + 1))


def test_the_third_give_back_of_one_attempt_is_exhausted_and_earlier_attempts_do_not_count() -> (
    None
):
    given = Attempt(attempt=2, outcome="given_back")
    older = Attempt(attempt=1, outcome="given_back")

    assert not rules.give_backs_exhausted(_record(attempt=2, attempts=[older, older, given]))
    assert rules.give_backs_exhausted(_record(attempt=2, attempts=[given, given]))


def test_an_expired_lease_is_cancelled_if_asked_even_on_the_last_attempt() -> None:
    assert rules.expiry(_record(attempt=5, max_attempts=5, cancel_requested=True)) == (
        ExecState.CANCELLED
    )
    assert rules.expiry(_record(attempt=5, max_attempts=5)) == ExecState.DEAD
    assert rules.expiry(_record(attempt=4, max_attempts=5)) == ExecState.PENDING


def test_an_attempt_entry_keeps_only_what_is_known() -> None:
    record = _record(attempt=2, started_at=NOON)
    report = rules.Report("retry", "HTTP 503", status_code=503)

    entry = rules.attempt_entry(record, report, NOON + timedelta(seconds=3))

    assert entry == {
        "attempt": 2,
        "started_at": "2026-03-02T12:00:00Z",
        "finished_at": "2026-03-02T12:00:03Z",
        "outcome": "retry",
        "error": "HTTP 503",
        "status_code": 503,
    }


def test_only_the_same_lease_holds_or_was_applied_before() -> None:
    mine = _record(attempt=2, lease_token="a")

    assert rules.holds_lease(_record(attempt=2, lease_token="a"), mine)
    assert not rules.holds_lease(_record(attempt=2, lease_token="b"), mine)
    assert not rules.holds_lease(_record(attempt=3, lease_token="a"), mine)
    assert not rules.holds_lease(None, mine)
    done = _record(attempt=2, lease_token="a", state=ExecState.SUCCEEDED)
    assert rules.applied_before(done, mine, ExecState.SUCCEEDED)
    assert not rules.applied_before(done, mine, ExecState.FAILED)
