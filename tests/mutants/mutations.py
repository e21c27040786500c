"""The named mutations `make mutants` applies, one at a time, to a copy of the checkout.

Each breaks one rule on purpose: a DESIGN invariant (docs/RELIABILITY.md restates them) or a rule
issue 14 added. `old` is text that occurs exactly once in `path` (a test in `make test`,
tests/unit/test_mutants_anchored.py, keeps it so after a refactor), `new` replaces it, and `tests`
are the pytest ids that must fail once it is applied: the fault suite's scenario for the rule and
the integration test named for it, the quickest first (the run stops at the first failure). A
mutation no listed test catches is a rule no test defends: the answer is a new test, not a
shorter list.

A mutation must be a valid program that breaks only its rule: the tool refuses one whose tests
fail on anything but an assertion. Where a rule spans two places in a file (a condition and the
value it names), `also` holds the further (old, new) pairs, applied together with the first.
"""

from __future__ import annotations

from dataclasses import dataclass

S16 = "tests/chaos/test_chaos_leases.py::test_s16_lease_races_judged_by_the_oracle"
RUNNER = "layers/takt/worker/runner.py"
WORKER_PROCESS = "layers/takt/worker/process.py"
AT_LEASE = "tests/unit/worker/test_worker_message_at_lease.py::"
SWEEPER = "layers/takt/watchdog/sweeper.py"
CLAIMER = "layers/takt/dispatch/claimer.py"
LIFECYCLE = "layers/takt/executions/lifecycle.py"
OCCURRENCES = "layers/takt/occurrences.py"
WATCH = "tests/integration/test_dispatch_watch.py::"
AT_LEASE_WRITE = "tests/integration/test_record_at_lease.py::"
DUE_STORE = "layers/takt/store/due.py"
CURSOR = "tests/integration/test_due_cursor.py::"
RETRY = "layers/takt/retry.py"
BACKOFF = "tests/unit/test_retry_backoff.py::"
WATCHDOG_CRASH = "tests/integration/test_watchdog_crash.py::"
# The occurrence policy's table: each row names the rule it defends.
ROWS = "tests/unit/test_occurrences.py::test_each_occurrence_rule_decides_its_row"
SLOTS = (
    "tests/unit/test_occurrences.py::"
    "test_which_overlap_policies_hold_a_slot_and_start_the_queued_run"
)
CATCHUP = "tests/integration/test_dispatch_catchup.py::"
CLAIMS = "tests/integration/test_dispatch_claimer.py::"
ROBFIG = "cli/takt_cli/migrate/robfig.py"
# Issue 26's provisioned tables, raised ahead of a burst and lowered after it.
AHEAD = "layers/takt/dispatch/ahead.py"
TABLE_STEP = "tests/unit/dispatch/test_table_scale_ahead.py::"
RULES = "layers/takt/executions/rules.py"
JOBS = "layers/takt/store/jobs.py"
# Issue 27's region fence: the policy, its tables and the paths it guards.
REGION_LEASE = "layers/takt/regions/lease.py"
REGION_POLICY = "tests/unit/regions/test_region_lease_policy.py::"
REGION_FENCE = "tests/unit/regions/test_region_fence.py::"
REGION_PATHS = "tests/unit/regions/test_region_fence_paths.py::"
REGIONS_MOTO = "tests/integration/test_regions_fence.py::"
# The region fault scenarios (issue 27): real `takt local --regions` processes, judged by a
# receiver that knows which process called; each catches a fence broken its own way.
REGIONS_CHAOS = "tests/chaos/test_chaos_regions.py::test_regions_"
REGION_FENCE_CODE = "layers/takt/regions/fence.py"


@dataclass(frozen=True)
class Mutation:
    name: str
    breaks: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    also: tuple[tuple[str, str], ...] = ()

    @property
    def edits(self) -> tuple[tuple[str, str], ...]:
        """Every (old, new) pair the mutation applies to `path`, the first one first."""
        return ((self.old, self.new), *self.also)


# What the occurrence policy's mutations break (takt.occurrences): one rule each, caught by the
# table row of tests/unit/test_occurrences.py that names it.
_POLICY = (
    "1. nothing due is lost (the occurrence policy decides each occurrence's execution or skip): "
)

# The lease's condition, as the lifecycle writes it: the lease mutations change one line of it.
_LEASE_EXPECT = """                    expect={
                        "state": (ExecState.PENDING, ExecState.RETRY_WAIT),
                        "attempt": message.attempt,
                    },
                    set={
                        "state": ExecState.RUNNING,"""

LEASE_LOST = "tests/integration/worker/test_worker_lease_lost.py::"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        name="completion-fenced-on-state-only",
        breaks="4. fenced completion (issue 14: completion fenced on state only)",
        path=LIFECYCLE,
        old="""                Transition(
                    expect=lease_fence(record),
                    set=values,""",
        new="""                Transition(
                    expect={"state": ExecState.RUNNING},
                    set=values,""",
        tests=(f"{S16}[worker-minutes-behind-reports-late]",),
    ),
    Mutation(
        name="lease-ignores-the-attempt",
        breaks="3. no double dispatch (issue 14: lease ignoring the attempt)",
        path=LIFECYCLE,
        old=_LEASE_EXPECT,
        new=_LEASE_EXPECT.replace('                        "attempt": message.attempt,\n', ""),
        tests=(f"{S16}[stale-copy-during-retry-wait]",),
    ),
    Mutation(
        name="lease-takes-a-running-execution",
        breaks="3. no double dispatch (issue 14: lease taking a running execution)",
        path=LIFECYCLE,
        old=_LEASE_EXPECT,
        new=_LEASE_EXPECT.replace(
            "(ExecState.PENDING, ExecState.RETRY_WAIT)",
            "(ExecState.PENDING, ExecState.RETRY_WAIT, ExecState.RUNNING)",
        ),
        tests=(
            "tests/unit/worker/test_runner_decisions.py::test_a_duplicate_message_of_a_running_attempt_calls_nothing",
            "tests/integration/test_worker_runner.py::test_a_duplicate_message_while_the_attempt_runs_does_not_call_the_target_again",
            f"{S16}[copy-while-running]",
        ),
    ),
    Mutation(
        name="expiry-fence-without-the-heartbeat-sequence",
        breaks="4. fenced completion (issue 14: expiry fence without the heartbeat sequence)",
        path=LIFECYCLE,
        old='fence = {**lease_fence(record), "heartbeat_seq": record.heartbeat_seq}',
        new="fence = {**lease_fence(record)}",
        tests=(
            "tests/integration/test_watchdog.py::test_a_lease_renewed_after_the_watchdog_read_it_is_not_reclaimed",
            f"{S16}[heartbeat-between-read-and-reclaim]",
        ),
    ),
    Mutation(
        name="watchdog-reclaims-live-leases",
        breaks="10. a worker that lost its lease stops (issue 14: watchdog reclaiming live leases)",
        path=SWEEPER,
        old="if record.lease_expires_at >= cutoff:",
        new="if record.lease_expires_at >= cutoff + 10**12:",
        tests=(
            "tests/unit/watchdog/test_watchdog_decisions.py::test_a_lease_expired_but_not_past_the_margin_is_left_to_its_worker",
            "tests/integration/test_watchdog.py::test_an_expired_lease_is_not_reclaimed_before_the_margin",
            f"{S16}[call-outlasts-the-resend-wait]",
        ),
    ),
    Mutation(
        name="watchdog-ignores-the-clock-margin",
        breaks="5. clocks (issue 14: watchdog ignoring the clock margin)",
        path=SWEEPER,
        old="cutoff = to_ms(now - timedelta(seconds=self._settings.clock_margin_sec))",
        new="cutoff = to_ms(now)",
        tests=(
            "tests/unit/watchdog/test_watchdog_decisions.py::test_a_lease_expired_but_not_past_the_margin_is_left_to_its_worker",
            "tests/integration/test_watchdog.py::test_an_expired_lease_is_not_reclaimed_before_the_margin",
            f"{S16}[worker-behind-within-margin]",
        ),
    ),
    Mutation(
        name="worker-never-holds-an-early-message",
        breaks="5. clocks (issue 14: worker never holding an early message)",
        path=RUNNER,
        old="self._sleep(min(early, self._settings.dispatch_ahead_sec + 1))",
        new="self._sleep(0)",
        tests=(
            "tests/unit/worker/test_runner_decisions.py::test_a_message_claimed_ahead_is_held_until_its_time_before_the_lease",
            f"{S16}[claimed-ahead]",
        ),
    ),
    Mutation(
        name="worker-deletes-its-message-before-the-lease",
        breaks="1. nothing due is lost (issue 26: a message is deleted only once it is leased)",
        path=WORKER_PROCESS,
        old="""        try:
            outcome = self._runner.process(message, host=self._host, on_release=released)""",
        new="""        released()
        try:
            outcome = self._runner.process(message, host=self._host)""",
        tests=(
            AT_LEASE + "test_an_infrastructure_error_before_the_lease_leaves_the_message_for_"
            "redelivery",
        ),
    ),
    Mutation(
        name="claimed-ahead-message-held-in-flight",
        breaks="issue 26: a message claimed ahead holds no in-flight message while it waits",
        path=RUNNER,
        old="            release()\n            self._sleep(",
        new="            self._sleep(",
        tests=(
            AT_LEASE
            + "test_a_message_claimed_ahead_is_deleted_before_its_hold_and_run_at_its_time",
        ),
    ),
    Mutation(
        name="message-released-twice",
        breaks="issue 26: a message is released once, before its hold or at its lease",
        path=RUNNER,
        old="        action, self._action = self._action, None\n",
        new="        action = self._action\n",
        tests=(
            AT_LEASE
            + "test_a_message_claimed_ahead_is_deleted_before_its_hold_and_run_at_its_time",
        ),
    ),
    Mutation(
        name="worker-holds-its-message-for-the-whole-call",
        breaks="issue 26: a run holds no in-flight message once its lease is taken",
        path=WORKER_PROCESS,
        old="outcome = self._runner.process(message, host=self._host, on_release=released)",
        new="outcome = self._runner.process(message, host=self._host)",
        tests=(
            AT_LEASE + "test_a_runs_message_is_deleted_once_its_lease_is_taken_and_before_its_call",
            "tests/e2e/test_e2e_workers.py::"
            "test_a_worker_killed_after_its_lease_deleted_its_message_is_run_once_more_by_the_watchdog",
        ),
    ),
    Mutation(
        name="lost-lease-does-not-stop-the-worker",
        breaks="10. a worker that lost its lease stops (issue 14 item 4)",
        path=RUNNER,
        old="""                if lease.expired():
                    stop.set("lease_lost")""",
        new="""                if False:
                    stop.set("lease_lost")""",
        tests=(
            "tests/unit/worker/test_runner_decisions.py::test_a_worker_whose_heartbeats_fail_stops_at_its_leases_local_expiry_and_reports_nothing",
            "tests/integration/worker/test_worker_lease_lost.py::test_a_heartbeat_that_never_answers_does_not_keep_the_worker_past_its_lease",
            "tests/integration/worker/test_worker_lease_lost.py::test_a_slow_last_attempt_is_marked_dead_only_after_its_worker_stopped",
        ),
    ),
    Mutation(
        name="heartbeat-does-not-renew-the-workers-lease",
        breaks="10. a worker that lost its lease stops (only a lost one: a renewed lease runs on)",
        path=RUNNER,
        old="lease.renewed(beat.sent_at)",
        new="pass",
        tests=(
            "tests/unit/worker/test_runner_decisions.py::test_a_worker_whose_heartbeats_succeed_runs_on_past_its_first_lease",
            "tests/integration/worker/test_worker_lease_lost.py::test_a_heartbeat_that_succeeds_renews_the_lease_on_the_workers_clock",
        ),
    ),
    Mutation(
        name="local-lease-counts-from-the-lease-writes-answer",
        breaks="10. a worker that lost its lease stops (issue 28: a slow lease write)",
        path=RUNNER,
        old="""        leased_at = self._monotonic()
        try:
            if verdict.skip_reason is not None:
                return self._skip(message, verdict.skip_reason, job)
            leased = self._lease(message, job, verdict)
""",
        new="""        try:
            if verdict.skip_reason is not None:
                return self._skip(message, verdict.skip_reason, job)
            leased = self._lease(message, job, verdict)
            leased_at = self._monotonic()
""",
        tests=(
            "tests/unit/worker/test_runner_decisions.py::test_a_worker_whose_lease_write_outlasted_the_lease_calls_nothing_and_reports_nothing",
            LEASE_LOST + "test_a_lease_write_that_takes_the_whole_lease_calls_nothing_"
            "its_lease_counts_from_the_send",
            LEASE_LOST + "test_a_slow_lease_write_leaves_the_worker_only_what_is_left_of_its_lease",
        ),
    ),
    Mutation(
        name="worker-calls-after-a-lease-write-that-took-the-whole-lease",
        breaks="10. a worker that lost its lease stops (issue 28: no call on a lease already over)",
        path=RUNNER,
        old="""        if lease.expired():
            # The lease write itself took the lease's whole time""",
        new="""        if False:
            # The lease write itself took the lease's whole time""",
        tests=(
            "tests/unit/worker/test_runner_decisions.py::test_a_worker_whose_lease_write_outlasted_the_lease_calls_nothing_and_reports_nothing",
            LEASE_LOST + "test_a_lease_write_that_takes_the_whole_lease_calls_nothing_"
            "its_lease_counts_from_the_send",
        ),
    ),
    Mutation(
        name="heartbeat-renews-from-its-answer",
        breaks="10. a worker that lost its lease stops (issue 28: a heartbeat's slow answer)",
        path=RUNNER,
        old="lease.renewed(beat.sent_at)",
        new="lease.renewed(self._monotonic())",
        tests=(
            LEASE_LOST
            + "test_a_heartbeat_whose_answer_is_slow_renews_the_lease_from_when_it_was_sent",
        ),
    ),
    Mutation(
        name="backoff-exponent-one-smaller",
        breaks="retry plan: the backoff formula, min(max, initial * 2^attempt) (issue 28)",
        path=RETRY,
        old="min(cap, initial * 2.0**attempt)",
        new="min(cap, initial * 2.0 ** (attempt - 1))",
        tests=(
            BACKOFF + "test_without_jitter_the_backoff_is_the_formula_for_the_attempt_that_failed",
            BACKOFF + "test_full_jitter_draws_below_the_formulas_ceiling_for_each_attempt",
        ),
    ),
    Mutation(
        name="backoff-not-capped-at-the-max-interval",
        breaks="retry plan: the backoff never exceeds max_interval (issue 28)",
        path=RETRY,
        old="min(cap, initial * 2.0**attempt)",
        new="initial * 2.0**attempt",
        tests=(BACKOFF + "test_the_backoff_never_exceeds_the_max_interval",),
    ),
    Mutation(
        name="full-jitter-draws-below-half-the-ceiling",
        breaks="retry plan: full jitter draws over the whole ceiling (issue 28)",
        path=RETRY,
        old='delay = ceiling * rand() if policy.jitter == "full" else ceiling',
        new='delay = ceiling * rand() / 2 if policy.jitter == "full" else ceiling',
        tests=(BACKOFF + "test_full_jitter_draws_below_the_formulas_ceiling_for_each_attempt",),
    ),
    Mutation(
        name="retry-after-not-capped-at-the-max-interval",
        breaks="retry plan: a target's Retry-After is a lower bound, up to max_interval",
        path=RETRY,
        old="delay = max(delay, min(retry_after, cap))",
        new="delay = max(delay, retry_after)",
        tests=(BACKOFF + "test_a_retry_after_is_a_lower_bound_capped_at_the_max_interval",),
    ),
    Mutation(
        name="worker-backs-off-for-the-attempt-before",
        breaks="retry plan: the worker's backoff is for the attempt that failed (issue 28)",
        path=RUNNER,
        old="backoff_delay(record.retry, record.attempt, retry_after=result.retry_after_sec)",
        new="backoff_delay(record.retry, record.attempt - 1, retry_after=result.retry_after_sec)",
        tests=(
            "tests/integration/test_worker_runner.py::"
            "test_a_failed_attempt_waits_the_backoff_the_formula_gives_for_its_attempt_number",
        ),
    ),
    Mutation(
        name="workers-job-read-eventually-consistent",
        breaks="8. edits decide (issue 28: the worker's pre-run job read is strongly consistent)",
        path=RUNNER,
        old="return self._jobs.get(message.tenant_id, message.job_id)",
        new="return self._jobs.get(message.tenant_id, message.job_id, consistent=False)",
        tests=(
            "tests/integration/test_dispatch_edits.py::"
            "test_the_workers_job_read_before_a_claimed_ahead_run_is_strongly_consistent",
        ),
    ),
    Mutation(
        name="expired-leases-next-attempt-left-to-its-message",
        breaks=(
            "1. nothing due is lost (issue 28: a watchdog dying between its expiry write and "
            "its message; the write keeps the execution in the open index)"
        ),
        path=LIFECYCLE,
        old="""                        "attempt": record.attempt + 1,
                        "check_at": self.check_at(now),
                    },
                    remove=LEASE_ATTRS,""",
        new="""                        "attempt": record.attempt + 1,
                    },
                    remove=(*LEASE_ATTRS, *OPEN_ATTRS),""",
        tests=(
            WATCHDOG_CRASH + "test_a_watchdog_dying_between_its_write_and_its_message_"
            "is_finished_by_the_next_sweep[expired-lease]",
        ),
    ),
    Mutation(
        name="released-retry-left-to-its-message",
        breaks=(
            "1. nothing due is lost (issue 28: a watchdog dying between its retry release and "
            "its message)"
        ),
        path=LIFECYCLE,
        old="""                expect={"state": ExecState.RETRY_WAIT, "attempt": record.attempt},
                set={"state": ExecState.PENDING, "check_at": self.check_at(now)},""",
        new="""                expect={"state": ExecState.RETRY_WAIT, "attempt": record.attempt},
                set={"state": ExecState.PENDING},
                remove=OPEN_ATTRS,""",
        tests=(
            WATCHDOG_CRASH + "test_a_watchdog_dying_between_its_write_and_its_message_"
            "is_finished_by_the_next_sweep[retry-due]",
        ),
    ),
    Mutation(
        name="dead-end-not-followed-up-by-the-next-sweep",
        breaks=(
            "1. nothing due is lost (issue 28: a watchdog dying between an execution's dead "
            "write and the job's note; the next sweep finishes what follows the end)"
        ),
        path=SWEEPER,
        old="        if record.follow_up and record.state.terminal:",
        new="        if record.follow_up and record.state.terminal and record.attempt < 0:",
        tests=(
            "tests/unit/watchdog/test_watchdog_decisions.py::"
            "test_a_watchdog_dying_between_a_dead_write_and_its_note_is_followed_up_once_by_the_"
            "next_sweep[before]",
            WATCHDOG_CRASH + "test_a_watchdog_dying_between_a_dead_write_and_the_jobs_note_"
            "leaves_it_to_the_next_sweep[before]",
        ),
    ),
    Mutation(
        name="followed-up-note-counted-twice",
        breaks=(
            "1. nothing due is lost, once (issue 28: the next sweep's redo of a dead end's note "
            "is the same note, so the failure streak counts that end once)"
        ),
        path=JOBS,
        old='''"(last_execution_id = :x AND NOT (last_outcome = :o AND last_run_at = :at)))"''',
        new='''"last_execution_id = :x)"''',
        tests=(
            WATCHDOG_CRASH + "test_a_watchdog_dying_between_a_dead_write_and_the_jobs_note_"
            "leaves_it_to_the_next_sweep[after]",
        ),
    ),
    Mutation(
        name="wide-step-never-gives-way-to-the-tick",
        breaks=(
            "takt local: a wide workflow step gives way to the scheduler's tick between its "
            "chunks (issue 28: the fan-out neighbour, docs/CAPACITY.md)"
        ),
        path="layers/takt/workflows/engine.py",
        old="            if first:",
        new="            if first < 0:",
        tests=(
            "tests/integration/test_workflow_wide.py::"
            "test_a_wide_fan_out_gives_way_to_the_foreground_between_chunks_and_still_runs_every_task",
        ),
    ),
    Mutation(
        name="retry-release-overwrites-a-cancel",
        breaks="4. fenced completion (issue 28: a cancel racing the watchdog's retry release wins)",
        path=LIFECYCLE,
        old='                expect={"state": ExecState.RETRY_WAIT, "attempt": record.attempt},',
        new='                expect={"attempt": record.attempt},',
        tests=(
            WATCHDOG_CRASH
            + "test_a_cancel_landing_between_the_watchdogs_read_and_its_retry_release_wins",
        ),
    ),
    Mutation(
        name="catchup-all-runs-only-the-latest",
        breaks="catch-up policy: all runs every missed occurrence in its window (issue 28)",
        path=OCCURRENCES,
        old="run = [t for t in recent if t >= horizon] or [latest]",
        new="run = [latest]",
        tests=(ROWS, CATCHUP + "test_catchup_policy_decides_runs_and_skips_after_an_outage"),
    ),
    Mutation(
        name="overlap-replace-runs-the-older-occurrences-too",
        breaks="overlap policy: replace runs only the newest occurrence",
        path=OCCURRENCES,
        old="runs=[_pending(newest)],",
        new="runs=[*map(_pending, older), _pending(newest)],",
        tests=(ROWS,),
    ),
    Mutation(
        name="claimer-ignores-a-busy-slot",
        breaks="overlap policy: the claim reads whether the job's slot is held by an open run",
        path=CLAIMER,
        old="busy = self._slot_busy(job)",
        new="busy = False",
        tests=(CLAIMS + "test_overlap_skip_records_skipped_while_the_previous_run_is_open",),
    ),
    Mutation(
        name="claimer-sees-an-ended-holder-as-busy",
        breaks="overlap policy: a slot whose run has ended is free",
        path=CLAIMER,
        old="return not holder.state.terminal",
        new="return True",
        tests=(CLAIMS + "test_overlap_skip_runs_and_takes_the_slot_when_the_previous_run_ended",),
    ),
    Mutation(
        name="claimer-notes-no-slot-holder",
        breaks="overlap policy: the run a claim starts takes the job's slot",
        path=CLAIMER,
        old="        firing.holder = record.execution_id",
        new="        pass",
        tests=(
            CLAIMS + "test_overlap_skip_runs_and_takes_the_slot_when_the_previous_run_ended",
            CATCHUP + "test_catchup_all_with_overlap_skip_runs_the_oldest_missed_and_skips_"
            "the_rest_as_overlapping",
        ),
    ),
    Mutation(
        name="last-attempt-gets-one-more",
        breaks="retry plan: the last attempt's failure or expiry ends the execution dead",
        path=RULES,
        old="return record.attempt >= record.max_attempts",
        new="return record.attempt > record.max_attempts",
        tests=(
            "tests/integration/test_watchdog.py::test_an_expired_lease_on_the_last_attempt_is_dead",
        ),
    ),
    Mutation(
        name="worker-ignores-a-cancel-read-at-its-heartbeat",
        breaks="lifecycle: a cancel asked for while running stops the worker at its next beat",
        path=RUNNER,
        old="elif beat.current.cancel_requested:",
        new="elif False:",
        tests=(
            "tests/integration/worker/test_worker_cancel.py::"
            "test_a_running_handler_is_stopped_at_its_next_heartbeat_and_not_retried",
        ),
    ),
    Mutation(
        name="worker-waits-past-the-calls-timeout",
        breaks="worker: a call past its timeout_sec is a retryable failure",
        path=RUNNER,
        old="                if now >= timeout_at:",
        new="                if False:",
        tests=(
            "tests/integration/worker/test_worker_supervision.py::"
            "test_a_handler_past_its_timeout_is_told_to_stop_and_the_attempt_is_retried",
        ),
    ),
    Mutation(
        name="k8s-import-reads-a-stepped-day-star-as-a-star",
        breaks="imports: robfig reads `*/2` in a day field as restricted (ORed with weekdays)",
        path=ROBFIG,
        old="        star = star and step <= 1",
        new="        star = star",
        tests=(
            "tests/unit/migrate/test_migrate_robfig.py::"
            "test_a_star_step_day_beside_a_weekday_is_ored_as_robfig_reads_it",
            "tests/unit/migrate/test_migrate_robfig.py::"
            "test_k8s_import_fires_at_robfigs_instants_or_refuses_with_the_reason",
        ),
    ),
    Mutation(
        name="crontab-import-takes-reboot",
        breaks="imports: a crontab @reboot line has no time and is refused with its reason",
        path="cli/takt_cli/migrate/crontab.py",
        old='if schedule.lower() == "@reboot":',
        new="if False:",
        tests=(
            "tests/unit/migrate/test_migrate_crontab.py::"
            "test_reboot_and_a_line_without_a_command_are_refused",
        ),
    ),
    Mutation(
        name="heartbeat-does-not-extend-the-stored-lease",
        breaks="10. a worker that lost its lease stops (a heartbeat that succeeds extends it)",
        path=LIFECYCLE,
        old="""        expires = to_ms(now + timedelta(seconds=self._settings.lease_sec))
        return self._write(""",
        new="""        expires = to_ms(now)
        return self._write(""",
        tests=(
            "tests/integration/worker/test_worker_supervision.py::"
            "test_heartbeats_extend_the_lease_while_the_handler_runs_and_the_lease_is_told_once",
        ),
    ),
    Mutation(
        name="give-backs-never-count-as-a-failure",
        breaks="lifecycle: an attempt given back again and again counts as a failed attempt",
        path=RULES,
        old="return earlier + 1 >= MAX_GIVE_BACKS",
        new="return earlier >= MAX_GIVE_BACKS",
        tests=(
            "tests/integration/worker/test_worker_supervision.py::"
            "test_an_execution_given_back_again_and_again_finally_counts_as_a_failed_attempt",
        ),
    ),
    Mutation(
        name="retry-message-delay-rounded-down",
        breaks="retry plan: a retry's delayed message never arrives before its backoff",
        path=RULES,
        old="retry_at, check_at(retry_at, resend_after_sec), math.ceil(delay.total_seconds())",
        new="retry_at, check_at(retry_at, resend_after_sec), math.floor(delay.total_seconds())",
        tests=("tests/unit/executions/test_rules.py",),
    ),
    Mutation(
        name="lease-retried-by-the-sdk-not-recognised-as-its-own",
        breaks="3. no double dispatch (a lease whose answer was lost is still the worker's)",
        path=LIFECYCLE,
        old="            if exc.current.lease_token == token:",
        new="            if False:",
        tests=(
            "tests/chaos/test_chaos_lost_responses.py::"
            "test_s10_a_lost_response_retried_by_the_sdk_is_harmless[lease]",
        ),
    ),
    Mutation(
        name="watchdog-keeps-an-expired-leases-running-slot",
        breaks="watchdog: an expired lease frees its tenant's running slot (docs/FAIRNESS.md)",
        path=SWEEPER,
        old="            self._release_slot(record.tenant_id, record.execution_id)",
        new="            pass",
        tests=(
            "tests/integration/test_fairness_running_cap.py::"
            "test_an_expired_lease_frees_its_slot_and_the_late_worker_does_not_free_the_next_holders",
        ),
    ),
    Mutation(
        name="short-lease-leaves-the-check-time-behind",
        breaks=(
            "1. nothing due is lost (a lease shorter than the resend wait moves the watchdog's "
            "check to its expiry)"
        ),
        path=RULES,
        old="return lease_sec < resend_after_sec",
        new="return False",
        tests=(
            "tests/integration/test_watchdog_lease_check.py::"
            "test_a_lease_shorter_than_the_resend_wait_moves_check_at_to_its_expiry",
        ),
    ),
    Mutation(
        name="watchdog-rereads-a-live-lease-every-sweep",
        breaks="watchdog: a live lease is looked at again when it expires, not every sweep",
        path=SWEEPER,
        old="            self._lifecycle.recheck_at_expiry(record)",
        new="            pass",
        tests=(
            "tests/integration/test_watchdog_lease_check.py::"
            "test_the_watchdog_looks_again_at_a_live_lease_and_recovers_it_once_expired",
        ),
    ),
    Mutation(
        name="stopped-http-call-follows-a-redirect",
        breaks="10. a worker that lost its lease stops (no call after the stop, redirects too)",
        path="layers/takt/targets/http.py",
        old="""            if ctx.stop.is_set():
                # The worker stopped waiting""",
        new="""            if False:
                # The worker stopped waiting""",
        tests=(
            "tests/integration/worker/test_http_egress.py::test_a_call_told_to_stop_does_not_follow_a_redirect_that_comes_after",
        ),
    ),
    Mutation(
        name="claimer-advance-without-the-version-fence",
        breaks="8. edits decide (issue 14: version fence on the claimer's advance)",
        path="layers/takt/store/jobs.py",
        old='condition = "#n = :fired AND #s = :active AND #v = :version"',
        new='condition = "#n = :fired AND #s = :active"',
        also=(
            (
                'names = {"#n": "next_run_time", "#s": "status", "#v": "version"}',
                'names = {"#n": "next_run_time", "#s": "status"}',
            ),
            ('            ":version": {"N": str(job.version)},\n', ""),
        ),
        tests=(
            "tests/integration/test_store_jobs.py::test_advance_does_not_move_a_job_edited_since_it_was_read",
            "tests/integration/test_dispatch_edits.py::test_an_edit_that_lands_after_the_claims_advance_still_keeps_every_new_occurrence",
        ),
    ),
    Mutation(
        name="worker-skips-the-lease-time-job-check",
        breaks="8. edits decide (issue 14: the worker's lease-time job check)",
        path=RUNNER,
        old="if not message.recorded or claimed_ahead(message, self._settings.clock_margin_sec):",
        new="if not message.recorded:",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_an_occurrence_claimed_ahead_and_then_edited_is_recorded_skipped_by_its_worker[paused]",
            "tests/integration/test_dispatch_edits.py::test_a_claimed_one_off_edited_before_its_time_is_skipped_with_the_reason_not_run",
        ),
    ),
    Mutation(
        name="lease-time-check-ignores-the-version",
        breaks="8. edits decide (issue 14: an edited job runs as claimed)",
        path="layers/takt/worker/recheck.py",
        old="if job.version == message.job_version:",
        new="if True:",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_an_occurrence_claimed_ahead_and_then_edited_is_recorded_skipped_by_its_worker[rescheduled]",
            "tests/integration/test_dispatch_edits.py::test_a_claimed_one_off_edited_before_its_time_is_skipped_with_the_reason_not_run[moved]",
            "tests/integration/test_dispatch_edits.py::test_a_claimed_one_off_whose_payload_changed_before_its_time_runs_as_it_now_is",
        ),
    ),
    Mutation(
        name="burst-message-not-delayed-to-its-second",
        breaks="5. clocks (issue 14: the :00 burst claimed 30 s ahead starts on its second)",
        path=CLAIMER,
        old="if until <= ahead_sec or until - elapsed_sec < 1 or outgoing.delay_sec:",
        new="if True:",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_the_minutes_first_second_is_claimed_ahead_and_sent_delayed_to_its_second",
            "tests/integration/test_dispatch_burst.py::test_the_minutes_first_second_is_claimed_30_s_ahead_and_delayed_until_then",
        ),
    ),
    Mutation(
        name="burst-claims-runs-its-instant-decides",
        breaks="8. edits decide (issue 14: overlap and workflow runs wait for the regular claim)",
        path=OCCURRENCES,
        old="return not overlap_rule(job.overlap).holds_slot and job.tasks is None",
        new="return True",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_job_whose_run_depends_on_its_instant_waits_for_the_regular_claim",
            "tests/integration/test_dispatch_burst.py::test_a_job_whose_run_depends_on_its_instant_waits_for_the_regular_claim",
        ),
    ),
    Mutation(
        name="watchdog-stops-at-a-bad-record",
        breaks="9. no record stops others (issue 14: bad record isolation, watchdog)",
        path=SWEEPER,
        old="""                except Exception as exc:
                    if not is_record_fault(exc):
                        raise
                    self._park(item, str(shard), exc, now)""",
        new="""                except Exception as exc:
                    raise
                    self._park(item, str(shard), exc, now)""",
        tests=(
            "tests/unit/watchdog/test_watchdog_decisions.py::test_a_record_that_cannot_be_read_is_quarantined_and_the_sweep_goes_on",
            "tests/integration/test_quarantine_watchdog.py::test_an_execution_that_cannot_be_parsed_is_quarantined_and_the_others_are_swept",
        ),
    ),
    Mutation(
        name="claimer-stops-at-a-bad-record",
        breaks="9. no record stops others (issue 14: bad record isolation, claimer)",
        path=CLAIMER,
        old="""            except Exception as exc:
                if not is_record_fault(exc):
                    raise
                firing.quarantined = True""",
        new="""            except Exception as exc:
                raise
                firing.quarantined = True""",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_job_whose_execution_the_table_refuses_is_parked_and_the_rest_of_the_claim_goes_on",
            "tests/integration/test_quarantine_claimer.py::test_a_year_500_job_is_quarantined_and_its_neighbours_run",
        ),
    ),
    Mutation(
        name="resting-driver-does-not-look-again",
        breaks="issue 26: a resting driver records its rest, then looks at the index again",
        path="layers/takt/dispatch/rest.py",
        old="""        self._due.rest(now)
        return self._quiet(now, watermark)""",
        new="""        self._due.rest(now)
        return True""",
        tests=(
            "tests/integration/test_driver_rest.py::test_an_item_put_while_the_driver_records_its_rest_keeps_it_ticking",
        ),
    ),
    Mutation(
        name="indexer-wakes-no-driver",
        breaks="issue 26: a job due soon, created while the driver rests, waits a minute",
        path="layers/takt/dispatch/indexer.py",
        old="self._waker.indexed(write.due)",
        new="pass",
        tests=(
            "tests/integration/test_driver_rest.py::test_a_job_created_while_the_driver_rests_starts_one_once",
        ),
    ),
    Mutation(
        name="reconciler-does-not-repair-the-due-item",
        breaks="1. nothing due is lost (issue 14: the reconciler of un-indexed jobs)",
        path="layers/takt/dispatch/reconciler.py",
        old="self._due.put(job.tenant_id, job.job_id, job.fire_time(job.next_run_time), now)",
        new="pass",
        tests=(
            "tests/integration/test_reconciler.py::test_a_job_no_indexer_ever_indexed_runs_late_once_reconciled",
        ),
    ),
    Mutation(
        name="claim-deletes-an-advance-in-flight",
        breaks="1. nothing due is lost (issue 14: s20, a claim deleting another's next due item)",
        path=CLAIMER,
        old="if job is not None and _ahead_of_its_job(job, item):",
        new="if False:",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_due_item_ahead_of_its_job_is_kept_and_an_old_one_has_the_job_checked",
            "tests/integration/test_dispatch_overlapping_claims.py::test_a_claim_that_dies_after_reading_an_advance_in_flight_leaves_the_job_indexed",
        ),
    ),
    Mutation(
        name="advance-conflict-trusts-the-other-claims-index",
        breaks="1. nothing due is lost (issue 14: s20, a job moved on by another claim)",
        path=CLAIMER,
        old="self._reindex(current, next_run, now)",
        new="pass",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_claim_whose_advance_finds_the_job_moved_on_by_another_indexes_it_where_it_points",
            "tests/integration/test_dispatch_overlapping_claims.py::test_a_claim_whose_advance_finds_the_job_moved_on_indexes_it_where_it_points",
        ),
    ),
    Mutation(
        name="half-done-advance-not-noted-for-the-reconciler",
        breaks="1. nothing due is lost (issue 14: the reconciler's check of a half-done advance)",
        path=CLAIMER,
        old="self._jobs.note_unindexed(job.tenant_id, job.job_id, now)",
        new="pass",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_due_item_ahead_of_its_job_is_kept_and_an_old_one_has_the_job_checked",
            "tests/integration/test_dispatch_overlapping_claims.py::test_a_job_left_pointing_where_nothing_is_indexed_is_repaired_by_the_reconciler",
        ),
    ),
    Mutation(
        name="watchdog-does-not-resend-a-lost-message",
        breaks="1. nothing due is lost",
        path=SWEEPER,
        old="""            self._lifecycle.resend(record, now)
            result.resent += 1""",
        new="""            result.resent += 1""",
        tests=(
            "tests/unit/watchdog/test_watchdog_decisions.py::test_a_pending_execution_whose_message_was_lost_is_sent_again_after_the_resend_wait",
            "tests/integration/test_watchdog.py::test_a_pending_execution_whose_message_was_lost_is_resent",
            "tests/chaos/test_chaos_dispatch.py::test_s3_messages_lost_after_the_execution_is_written_are_sent_again",
        ),
    ),
    Mutation(
        name="execution-id-not-deterministic",
        breaks="2. atomic advance, or idempotent recovery (deterministic ids)",
        path=CLAIMER,
        old="job, execution_id(job.job_id, scheduled), scheduled, state, now, reason=reason",
        new="job, execution_id(job.job_id, now), scheduled, state, now, reason=reason",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_claim_creates_one_execution_under_the_occurrences_id_and_a_second_claim_adds_none",
            "tests/integration/test_dispatch_crash.py::test_a_claim_that_crashes_between_steps_is_finished_by_the_next_ticks",
            "tests/chaos/test_chaos_dispatch.py::test_s2_a_claimer_dying_between_each_pair_of_steps_loses_and_doubles_nothing",
        ),
    ),
    Mutation(
        name="execution-create-unconditional",
        breaks="3. no double dispatch (attribute_not_exists on the execution id)",
        path="layers/takt/store/executions.py",
        old="""                Item=item,
                ConditionExpression="attribute_not_exists(sk)",""",
        new="""                Item=item,""",
        tests=(
            "tests/integration/test_store_executions.py::test_create_is_idempotent_and_keeps_the_first_record",
        ),
    ),
    Mutation(
        name="idempotency-key-ignores-the-body",
        breaks="6. idempotent create",
        path="layers/takt/api/jobs.py",
        old="if earlier.body_hash != digest:",
        new="if False:",
        tests=(
            "tests/api/test_api_jobs.py::test_same_idempotency_key_with_another_body_is_422_problem",
        ),
    ),
    Mutation(
        name="payload-limit-not-enforced",
        breaks="7. bad input never corrupts",
        path="layers/takt/api/jobs.py",
        old="        if size > limit:\n            raise PayloadTooLargeError(",
        new="        if size > 10 * limit:\n            raise PayloadTooLargeError(",
        tests=("tests/api/test_api_bad_input.py",),
    ),
    Mutation(
        name="older-outcome-noted-over-a-newer-success",
        breaks=(
            "4. fenced completion (issue 15: an older run's outcome never stands over a newer "
            "success on the job)"
        ),
        path=LIFECYCLE,
        old="        if newer is not None and newer.state is ExecState.SUCCEEDED:",
        new="        if False:",
        tests=(
            "tests/api/test_api_job_outcomes.py::"
            "test_an_older_failure_ending_after_a_newer_unnoted_success_does_not_stand",
        ),
    ),
    Mutation(
        name="claim-watches-nothing",
        breaks=(
            "1. nothing due is lost (issue 15: a claim's executions, outside the open index, are "
            "listed for the watchdog)"
        ),
        path=CLAIMER,
        old="        self._watch(firings, shard, now)\n",
        new="",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_claim_lists_its_executions_for_the_watchdog_before_it_creates_them",
            "tests/chaos/test_chaos_dispatch.py::"
            "test_s3_messages_lost_after_the_execution_is_written_are_sent_again",
            WATCH + "test_an_execution_whose_message_was_lost_is_sent_again_after_its_check",
        ),
    ),
    Mutation(
        name="watch-written-after-the-executions",
        breaks=(
            "1. nothing due is lost (issue 15: the watch is written before what it lists, so a "
            "claim dying between them leaves nothing unchecked)"
        ),
        path=CLAIMER,
        old="""        self._watch(firings, shard, now)
        nothing: list[Outgoing] = []
        created = self._phases.each(
            self._isolated(
                lambda f: self._create_executions(f, now, f.result, epoch), nothing, now
            ),
            firings,
            result,
        )
""",
        new="""        nothing: list[Outgoing] = []
        created = self._phases.each(
            self._isolated(
                lambda f: self._create_executions(f, now, f.result, epoch), nothing, now
            ),
            firings,
            result,
        )
        self._watch(firings, shard, now)
""",
        tests=(
            "tests/unit/dispatch/test_claimer_decisions.py::test_a_claim_lists_its_executions_for_the_watchdog_before_it_creates_them",
            WATCH + "test_a_claim_that_dies_after_its_watch_leaves_nothing_unchecked",
        ),
    ),
    Mutation(
        name="watch-check-indexes-only-pending",
        breaks=(
            "1. nothing due is lost (issue 15: a dead worker's execution, outside the open index, "
            "is found by its watch list and runs again within lease + watchdog interval)"
        ),
        path="layers/takt/store/executions.py",
        old='            if "open_shard" in item or state is None or state in ENDED:',
        new='            if "open_shard" in item or state != ExecState.PENDING.value:',
        tests=(WATCH + "test_a_dead_workers_execution_is_indexed_and_retried_after_its_lease",),
    ),
    Mutation(
        name="overlap-skip-runs-what-overlaps-its-first-run",
        breaks=(
            _POLICY
            + "overlap skip, issue 28's blind class catch-up all with overlap skip: the first "
            "run of a firing holds the slot, so the later occurrences of that firing are skipped"
        ),
        path=OCCURRENCES,
        old="""            # The run just started holds the slot for the occurrences after it.
            busy = True
""",
        new="",
        tests=(ROWS,),
    ),
    Mutation(
        name="catchup-skip-grace-excludes-its-bound",
        breaks=_POLICY + "catchup skip: the latest runs when it is at most the misfire grace late",
        path=OCCURRENCES,
        old="now - latest <= MISFIRE_GRACE",
        new="now - latest < MISFIRE_GRACE",
        tests=(ROWS,),
    ),
    Mutation(
        name="overlap-skip-ignores-a-busy-slot",
        breaks=_POLICY + "overlap skip: an occurrence due while the job's slot is busy is skipped",
        path=OCCURRENCES,
        old="""            if busy:
                runs.append(Occurrence(scheduled, ExecState.SKIPPED, "overlap=skip"))""",
        new="""            if False:
                runs.append(Occurrence(scheduled, ExecState.SKIPPED, "overlap=skip"))""",
        tests=(ROWS,),
    ),
    Mutation(
        name="overlap-queue-starts-every-run-of-a-firing",
        breaks=_POLICY + "overlap queue: a firing starts its first occurrence, the others wait",
        path=OCCURRENCES,
        old="ExecState.QUEUED if busy or index > 0 else ExecState.PENDING",
        new="ExecState.QUEUED if busy else ExecState.PENDING",
        tests=(ROWS,),
    ),
    Mutation(
        name="overlap-replace-leaves-the-holder-running",
        breaks=_POLICY
        + "overlap replace: the newest occurrence stops the execution holding the slot",
        path=OCCURRENCES,
        old="replaces=Replacement(newest, reason) if busy else None,",
        new="replaces=None,",
        tests=(
            ROWS,
            "tests/integration/test_dispatch_jitter_pause.py::"
            "test_overlap_replace_cancels_a_waiting_run_and_stops_a_running_one",
        ),
    ),
    Mutation(
        name="slot-policies-hold-no-slot",
        breaks=_POLICY + "overlap skip, queue and replace hold the job's slot while a run is open",
        path=OCCURRENCES,
        old="    holds_slot: ClassVar[bool] = True\n",
        new="    holds_slot: ClassVar[bool] = False\n",
        tests=(
            SLOTS,
            "tests/integration/worker/test_worker_overlap.py::"
            "test_skip_records_occurrences_skipped_while_a_long_handler_runs_then_runs_again",
        ),
    ),
    Mutation(
        name="queue-run-ending-starts-no-queued-run",
        breaks=_POLICY
        + "overlap queue: when a run ends, the lifecycle starts the oldest queued run",
        path=OCCURRENCES,
        old="    promotes_queued = True\n",
        new="    promotes_queued = False\n",
        tests=(
            SLOTS,
            "tests/unit/executions/test_lifecycle.py::"
            "test_the_end_of_a_queue_jobs_run_promotes_its_oldest_queued_execution",
        ),
    ),
    Mutation(
        name="catchup-all-ignores-its-window",
        breaks=_POLICY + "catch-up all: missed occurrences older than catchup_window are skipped",
        path=OCCURRENCES,
        old="run = [t for t in recent if t >= horizon] or [latest]",
        new="run = list(recent)",
        tests=(ROWS,),
    ),
    Mutation(
        name="catchup-skip-ignores-the-misfire-grace",
        breaks=_POLICY + "catch-up skip: the latest occurrence runs only when at most 60 s late",
        path=OCCURRENCES,
        old='elif job.catchup == "once" or now - latest <= MISFIRE_GRACE:',
        new="elif True:",
        tests=(ROWS,),
    ),
    Mutation(
        name="catchup-horizon-overflows-past-the-datetime-range",
        breaks=(
            _POLICY
            + "issue 28, a stored catch-up window never overflows the planner (interval 1s, "
            "catchup all, catchup_window 740000d ran 0 times, parked in quarantine)"
        ),
        path=OCCURRENCES,
        old="return _EARLIEST if window >= reach else now - window",
        new="return now - window",
        tests=(
            "tests/unit/test_occurrences.py::"
            "test_a_catchup_window_past_the_datetime_range_is_clamped_not_overflowed",
        ),
    ),
    Mutation(
        name="calendars-black-out-nothing",
        breaks=_POLICY
        + "calendars: an occurrence inside a calendar's window is skipped, naming it",
        path=OCCURRENCES,
        old="inside = _blackout(calendars, scheduled)",
        new="inside = None",
        tests=(ROWS,),
    ),
    Mutation(
        name="api-accepts-an-unplannable-catchup-window",
        breaks=(
            "7. bad input never corrupts (issue 28: a catch-up window no firing can plan is "
            "refused, naming catchup_window)"
        ),
        path="layers/takt/api/patch.py",
        old="""    if problem is not None:
        raise InvalidRequestError(problem, [{"field": "catchup_window", "message": problem}])""",
        new="""    if False:
        raise InvalidRequestError(problem, [{"field": "catchup_window", "message": problem}])""",
        tests=(
            "tests/api/test_api_catchup_window.py::"
            "test_a_patch_that_makes_the_window_unplannable_is_refused_and_changes_nothing",
        ),
    ),
    Mutation(
        name="workflow-tasks-start-at-their-claim",
        breaks=(
            "5. clocks (issue 28: a workflow run claimed ahead starts no earlier than its time; "
            "its root tasks are scheduled at the run's time, not the claim's)"
        ),
        path="layers/takt/workflows/engine.py",
        old="at = max(now, origin.scheduled_time)",
        new="at = now",
        tests=(
            "tests/integration/test_workflow_runs.py::"
            "test_a_workflow_run_claimed_ahead_calls_its_first_task_no_earlier_than_its_time",
        ),
    ),
    Mutation(
        name="token-bucket-add-past-its-burst",
        breaks=(
            "issue 28: a tenant's token bucket never grants more than its burst to writers "
            "racing on it (the add's condition leaves room for the tokens it takes)"
        ),
        path="layers/takt/store/buckets.py",
        old="return math.floor(now_us + (burst - granted + 1e-9) * (_US / rate))",
        new="return math.floor(now_us + (burst + 1e-9) * (_US / rate))",
        tests=(
            "tests/unit/fairness/test_fairness_gcra.py::"
            "test_the_adds_limit_is_the_latest_tat_that_still_holds_the_tokens",
            "tests/integration/test_token_buckets.py::"
            "test_racing_requests_past_the_burst_get_exactly_the_burst",
        ),
    ),
    Mutation(
        name="unserved-handler-circles-for-ever",
        breaks=(
            "issue 28: an attempt whose handler no worker serves fails after "
            "unserved_limit_sec instead of staying pending for ever"
        ),
        path=RUNNER,
        old="if (now - since).total_seconds() < self._settings.unserved_limit_sec:",
        new="if (now - since).total_seconds() >= 0:",
        tests=(
            "tests/integration/worker/test_worker_handlers.py::"
            "test_an_attempt_whose_handler_no_worker_serves_fails_after_the_unserved_limit",
        ),
    ),
    Mutation(
        name="unconditional-patch-answers-412-to-a-race",
        breaks=(
            "issue 28: an unconditional PATCH applies to the latest version; 412 is only for "
            "a stale If-Match (docs/API.md)"
        ),
        path="layers/takt/api/jobs.py",
        old="""            except _LostRaceError:
                if if_match is not None:""",
        new="""            except _LostRaceError:
                if True:""",
        tests=(
            "tests/api/test_api_patch_races.py::"
            "test_an_unconditional_patch_that_loses_a_race_applies_to_the_latest_version",
        ),
    ),
    Mutation(
        name="rerun-attempts-read-across-re-runs",
        breaks=(
            "issue 28: a re-run's attempts read against its own budget, with the fence "
            "(execution id, attempt) still counted across re-runs"
        ),
        path="layers/takt/models/records.py",
        old="used = self.rerun_from or 0",
        new="used = 0",
        tests=(
            "tests/api/test_api_executions.py::"
            "test_a_re_run_reads_its_attempts_against_its_own_budget_with_the_fence_still_unique",
        ),
    ),
    Mutation(
        name="key-rotation-retries-after-losing-the-race",
        breaks=(
            "issue 28: racing webhook-key rotations cannot both move the key on; the one that "
            "loses its conditional write on the generation answers 409 (docs/SECURITY.md)"
        ),
        path="layers/takt/tenants/webhook_keys.py",
        old="        if not self._states.advance(tenant_id, state, until_ms):\n",
        new=(
            "        if not self._states.advance(tenant_id, state, until_ms) and not "
            "self._states.advance(tenant_id, state := self._states.read(tenant_id), until_ms):\n"
        ),
        tests=(
            "tests/integration/test_webhook_keys.py::"
            "test_a_rotation_that_loses_the_race_is_refused_409_and_does_not_move_the_key_again",
        ),
    ),
    Mutation(
        name="region-fence-acts-at-its-margin",
        breaks="issue 27: a region acts only while its proof is younger than lease - margin",
        path=REGION_LEASE,
        old="if proof is not None and now - proof.at < times.trust_sec:",
        new="if proof is not None and now - proof.at <= times.trust_sec:",
        tests=(
            REGION_POLICY
            + "test_a_region_acts_only_while_its_proof_is_younger_than_lease_minus_margin",
            REGIONS_MOTO
            + "test_a_region_whose_proof_is_older_than_lease_minus_margin_refuses_to_claim",
        ),
    ),
    Mutation(
        name="region-standby-wait-shortened",
        breaks="issue 27: a standby takes over only after lease + margin unchanged",
        path=REGION_LEASE,
        old="    if may_take_over and waited >= patience:",
        new="    if may_take_over and waited >= patience - 2 * times.margin_sec:",
        tests=(
            REGION_POLICY
            + "test_the_lease_policy_renews_waits_or_takes_over_by_the_lease_and_the_margin",
            REGION_FENCE + "test_a_standby_takes_over_only_after_lease_plus_margin_unchanged",
        ),
    ),
    Mutation(
        name="promoted-region-acts-at-once",
        breaks="issue 27: a promoted region waits lease + margin before it acts",
        path=REGION_LEASE,
        old="        if lease.renewals > 0 or waited >= times.wait_sec:",
        new="        if lease.renewals >= 0 or waited >= times.wait_sec:",
        tests=(
            REGION_FENCE
            + "test_a_promoted_region_waits_lease_plus_margin_and_the_old_holder_stops",
            REGION_POLICY
            + "test_the_lease_policy_renews_waits_or_takes_over_by_the_lease_and_the_margin",
        ),
    ),
    Mutation(
        name="promote-taken-back-after-one-wait",
        breaks="issue 27: a lease at 0 renewals is left to its promoted holder for twice the wait",
        path=REGION_LEASE,
        old="    patience = times.idle_wait_sec if lease.renewals == 0 else times.wait_sec",
        new="    patience = times.wait_sec",
        tests=(
            REGION_FENCE
            + "test_a_promote_is_not_taken_back_by_the_demoted_region_that_saw_it_first",
            REGION_POLICY
            + "test_the_lease_policy_renews_waits_or_takes_over_by_the_lease_and_the_margin",
        ),
    ),
    Mutation(
        name="region-renewal-unconditional",
        breaks="issue 27: a renewal is conditional on the holder and its epoch",
        path="layers/takt/store/region_lease.py",
        old="""            "holder = :me AND epoch = :epoch",""",
        new="""            "holder = :me OR epoch = :epoch OR attribute_exists(pk)",""",
        tests=(
            REGIONS_MOTO + "test_a_take_over_on_the_lease_table_fences_the_old_holder",
            "tests/integration/test_store_region_lease.py::"
            "test_only_the_holder_at_its_epoch_renews",
        ),
    ),
    Mutation(
        name="region-epoch-check-skipped",
        breaks="issue 27: a job advance is refused at an epoch behind the job's region_epoch",
        path=JOBS,
        old=(
            '            condition += " AND (attribute_not_exists(region_epoch) OR region_epoch '
            '<= :re)"\n'
        ),
        new="",
        tests=(
            REGIONS_MOTO + "test_an_advance_behind_the_job_s_region_epoch_is_refused",
            REGIONS_MOTO + "test_an_old_region_cannot_advance_a_job_a_later_epoch_advanced",
        ),
    ),
    Mutation(
        name="region-epoch-refuses-its-own",
        breaks="issue 27: a region advances a job again at the epoch that last advanced it",
        path=JOBS,
        old="OR region_epoch <= :re)",
        new="OR region_epoch < :re)",
        tests=(
            REGIONS_MOTO + "test_a_region_advances_a_job_again_at_the_epoch_it_last_advanced_it_at",
        ),
    ),
    Mutation(
        name="region-claim-ignores-a-later-epoch",
        breaks="issue 27: a claim that meets a job advanced at a later epoch stops, fenced",
        path=CLAIMER,
        old="    return stored is not None and epoch is not None and stored > epoch",
        new="    return False",
        tests=(REGIONS_MOTO + "test_an_old_region_cannot_advance_a_job_a_later_epoch_advanced",),
    ),
    Mutation(
        name="region-claim-unfenced",
        breaks="issue 27: a fenced region refuses a claim before any write",
        path=CLAIMER,
        old="        epoch = self._fence.epoch()\n        result = ClaimResult()",
        new="        epoch = None\n        result = ClaimResult()",
        tests=(REGIONS_MOTO + "test_a_fenced_region_refuses_a_claim_before_any_write",),
    ),
    Mutation(
        name="region-driver-sweeps-fenced",
        breaks="issue 27: a driver sweeps only while its region may act",
        path="layers/takt/dispatch/driver.py",
        old="        if not self._fence.step():",
        new="        if not self._fence.step() and False:",
        tests=(REGIONS_MOTO + "test_a_fenced_driver_does_not_claim_its_second",),
    ),
    Mutation(
        name="region-worker-leases-when-fenced",
        breaks="issue 27: a fenced region's worker gives the message back without a write",
        path=RUNNER,
        old="        self._fence.epoch()\n        refused = self._admit(message, host, release)",
        new="        refused = self._admit(message, host, release)",
        also=(
            (
                "            # Again after the hold and the gate, which may have taken a few "
                "seconds.\n            self._fence.epoch()\n",
                "            # Again after the hold and the gate, which may have taken a few "
                "seconds.\n            pass\n",
            ),
        ),
        tests=(
            REGION_PATHS
            + "test_a_worker_in_a_fenced_region_gives_the_message_back_without_a_write",
        ),
    ),
    Mutation(
        name="region-worker-reports-when-fenced",
        breaks="issue 27: a run whose region lost the lease reports nothing",
        path=RUNNER,
        old=(
            "            return RunOutcome("
            'record.execution_id, "region_fenced", "region lease lost")'
        ),
        new="            return None",
        tests=(REGION_PATHS + "test_a_run_whose_region_lost_the_lease_reports_nothing",),
    ),
    Mutation(
        name="region-watchdog-sweeps-fenced",
        breaks="issue 27: the watchdog acts only while its region may act",
        path=SWEEPER,
        old="            result.fenced = True\n            return False",
        new="            result.fenced = True\n            return True",
        tests=(REGION_PATHS + "test_a_fenced_region_s_watchdog_takes_back_no_expired_lease",),
    ),
    Mutation(
        name="region-worker-heartbeats-when-fenced",
        breaks="issue 27: a run whose region lost the lease extends no lease",
        path=RUNNER,
        old=(
            "        self._fence.epoch()  "
            "# Fenced: this beat fails, and the lease runs out unextended."
        ),
        new="        pass",
        tests=(REGION_PATHS + "test_a_run_whose_region_is_fenced_stops_heartbeating",),
    ),
    Mutation(
        name="region-standby-never-takes-over",
        breaks="issue 27: a standby takes over a lease unchanged for lease + margin",
        path=REGION_LEASE,
        old="    if may_take_over and waited >= patience:",
        new="    if may_take_over and waited >= patience and lease.epoch < 0:",
        # c: the kill and failover of a (which only `make chaos` runs), at a 3 s delay.
        tests=(REGIONS_CHAOS + "c_replication_delayed_by_seconds_loses_nothing_on_failover",),
    ),
    Mutation(
        name="region-lost-lease-keeps-its-proof",
        breaks="issue 27: a region whose renewal failed stops trusting its proof at once",
        path=REGION_FENCE_CODE,
        old="        self._proof = None\n",
        new=("        self._proof = self._proof and Proof(self._proof.epoch, self._monotonic())\n"),
        tests=(REGIONS_CHAOS + "b_a_paused_region_returning_after_its_lease_dispatches_nothing",),
    ),
    Mutation(
        name="region-standby-counts-from-its-first-sighting",
        breaks="issue 27: a standby times and takes over the lease as it last read it",
        path=REGION_LEASE,
        old="    if previous is not None and previous.lease.state == lease.state:",
        new="    if previous is not None:",
        tests=(REGIONS_CHAOS + "c_replication_delayed_by_seconds_loses_nothing_on_failover",),
    ),
    Mutation(
        name="region-standby-takes-over-at-once",
        breaks="issue 27: a standby never takes over a lease its holder renews",
        path=REGION_LEASE,
        old="    if may_take_over and waited >= patience:",
        new="    if may_take_over:",
        # The policy's table first: the chaos scenario sees a steal only when a read falls
        # between two renewals, which a run may miss (it survived the run of 2026-12-05 22:46).
        tests=(
            "tests/unit/regions/test_region_lease_policy.py::"
            "test_the_lease_policy_renews_waits_or_takes_over_by_the_lease_and_the_margin",
            REGIONS_CHAOS + "d_an_edit_in_the_standby_region_converges_while_the_holder_dispatches",
        ),
    ),
    Mutation(
        name="worker-pools-fewer-connections-than-slots",
        breaks="issue 26: a worker keeps a pooled connection to a host for each of its slots",
        path="cli/takt_cli/commands/worker.py",
        old=(
            '    update: dict[str, object] = {"http_pool_size": '
            "max(settings.http_pool_size, concurrency)}\n"
        ),
        new="    update: dict[str, object] = {}\n",
        tests=(
            "tests/integration/worker/test_http_pool.py::"
            "test_a_worker_keeps_a_pooled_connection_to_a_host_for_each_of_its_slots",
        ),
    ),
    Mutation(
        name="ticker-claims-lowest-partition-first",
        breaks="issue 26: a tick starts its claims shuffled by its second, not lowest first",
        path="layers/takt/dispatch/ticker.py",
        old="    return claim_order(claims, _second(claims)) if claims else claims\n",
        new="    return claims\n",
        tests=(
            "tests/unit/dispatch/test_due_split.py::"
            "test_a_tick_starts_its_claims_in_an_order_shuffled_by_its_second",
        ),
    ),
    Mutation(
        name="simulator-claims-lowest-partition-first",
        breaks="issue 26: the simulator starts a tick's claims in the ticker's order",
        path="cli/takt_cli/capacity/sim.py",
        old="                busy = claim_order(swept, step // ticks_every)\n",
        new="                busy = swept\n",
        tests=(
            "tests/unit/capacity/test_capacity_sim.py::"
            "test_a_ticks_claims_start_shuffled_so_no_partition_waits_last_for_a_free_claimer",
        ),
    ),
    Mutation(
        name="split-minute-read-as-n-shards",
        breaks="1. nothing due is lost (issue 26: readers enumerate N*k(m) of a split minute)",
        path="layers/takt/dispatch/ticker.py",
        old="            siblings = tuple(shard + n * j for j in range(1, split))",
        new="            siblings = tuple(shard + n * j for j in range(1, 1))",
        tests=(
            "tests/unit/dispatch/test_due_split.py::"
            "test_an_item_written_at_a_stale_split_is_still_claimed",
            "tests/integration/test_dispatch_split.py::"
            "test_a_hot_minute_split_over_sub_partitions_is_claimed_exactly_once",
        ),
    ),
    Mutation(
        name="split-minute-count-never-expires",
        breaks="issue 26: a minute's count item expires once the watermark passed the minute",
        path="layers/takt/dispatch/ticker.py",
        old="        self._due.expire_count(watermark, now)\n",
        new="",
        tests=(
            "tests/integration/test_dispatch_split.py::"
            "test_a_minutes_count_expires_a_day_after_the_watermark_passes_it_and_not_before",
        ),
    ),
    Mutation(
        name="minute-counts-not-priced",
        breaks="issue 26: the cost model prices the hot minute split's count writes",
        path="cli/takt_cli/capacity/model.py",
        old="        return self.count_write_units_per_due_write * self.minute_count_share",
        new="        return 0.0",
        tests=(
            "tests/unit/capacity/test_capacity_minute_counts.py::"
            "test_each_scenario_prices_its_hours_count_writes_as_a_line_of_its_own",
        ),
    ),
    Mutation(
        name="minute-count-sample-never-thins",
        breaks="issue 26: the cost model thins a minute's count sample as the minute splits",
        path="cli/takt_cli/capacity/model.py",
        old="        total += (min(items, bound) - written) / k",
        new="        total += min(items, bound) - written",
        tests=(
            "tests/unit/capacity/test_capacity_minute_counts.py::"
            "test_a_minutes_count_writes_thin_as_it_splits_as_the_shipped_hashing_counts_them",
        ),
    ),
    Mutation(
        name="split-minute-shards-even",
        breaks=(
            "issue 26: the simulator keeps in a split minute's base shards what was written "
            "before it split"
        ),
        path="cli/takt_cli/capacity/model.py",
        old="        if count <= 0 or parts == self.due_shards:",
        new="        if count <= 0 or parts > 0:",
        tests=(
            "tests/unit/capacity/test_capacity_sim.py::"
            "test_a_split_minutes_base_shard_keeps_what_was_written_before_it_split",
        ),
    ),
    Mutation(
        name="split-minute-budget-divided-by-n",
        breaks=(
            "issue 26: a backlog's share of the lanes' room is divided between the N*k "
            "partitions a tick claims of a split minute (docs/FAIRNESS.md)"
        ),
        path=CLAIMER,
        old="    return partitions or shards",
        new="    return shards",
        tests=(
            "tests/unit/fairness/test_fairness_split_minute.py::"
            "test_a_backlog_in_a_minute_split_k_ways_is_sent_its_share_of_the_lanes_room_once",
        ),
    ),
    Mutation(
        name="table-lowered-within-the-burst",
        breaks=(
            "issue 26: a table raised ahead of a burst keeps its capacity through the burst's "
            "minute and its tail (docs/DEPLOY.md, Table billing)"
        ),
        path=AHEAD,
        old=(
            "        if self.last_increase is not None and now - self.last_increase < hold:\n"
            "            return False\n"
        ),
        new="",
        tests=(
            TABLE_STEP + "test_a_capacity_is_not_lowered_within_the_hold_after_its_last_increase",
            TABLE_STEP + "test_the_step_keeps_a_burst_raised_within_the_hold_after_its_increase",
        ),
    ),
    Mutation(
        name="table-capacity-left-to-target-tracking",
        breaks=(
            "issue 26: the step lowers a table's capacity with its minimums, one decrease for "
            "both ways, rather than holding the burst's for target tracking's 15 minutes"
        ),
        path=AHEAD,
        old="            lowered = minimum.below(held) and self._lower(",
        new="            lowered = False and self._lower(",
        tests=(
            TABLE_STEP
            + "test_the_step_lowers_minimums_and_capacity_together_an_hour_after_a_decrease",
            "tests/integration/test_table_scale_ahead_aws.py::"
            "test_a_passed_burst_lowers_each_tables_minimums_and_capacity_to_its_floors",
        ),
    ),
    Mutation(
        name="table-reads-not-raised-ahead",
        breaks="issue 26: a burst's reads are raised ahead with its writes",
        path=AHEAD,
        old="        return Units(max(wanted.write, held.write), max(wanted.read, held.read))",
        new="        return Units(max(wanted.write, held.write), held.read)",
        tests=(
            TABLE_STEP + "test_the_step_raises_each_tables_minimums_to_the_busiest_minutes_units",
            "tests/integration/test_table_scale_ahead_aws.py::"
            "test_a_burst_ahead_raises_both_minimums_of_each_table",
        ),
    ),
    Mutation(
        name="region-failed-renewal-counts",
        breaks="issue 27: only a renewal the lease table accepted proves the holder",
        path=REGION_FENCE_CODE,
        old="        if renewed is None:\n            return False\n",
        new=(
            "        if renewed is None:\n"
            "            self._proof = Proof(epoch, before)\n"
            "            return True\n"
        ),
        tests=(REGIONS_CHAOS + "e_failover_and_failback_by_promote_lose_nothing",),
    ),
    Mutation(
        name="region-edit-written-locally",
        breaks="issue 27: a change to an existing job is written in the lease holder's replica",
        path="layers/takt/api/jobs.py",
        old="            yield JobService(self._api, holder.tenant)",
        new="            yield self",
        tests=(
            "tests/api/test_api_holder_writes.py::"
            "test_an_edit_through_a_standby_is_written_in_the_lease_holders_replica",
            REGIONS_CHAOS + "d_an_edit_in_the_standby_region_converges_while_the_holder_dispatches",
        ),
    ),
    Mutation(
        name="lease-write-of-an-unrecorded-run-ignores-an-existing-one",
        breaks=(
            "3. no double dispatch (issue 26: the lease that writes an unrecorded occurrence "
            "runs it only when its conditional put wrote it)"
        ),
        path=LIFECYCLE,
        old=(
            "        if self._executions.create(record, check_at_ms=check_at):\n"
            "            return record\n"
        ),
        new=(
            "        self._executions.create(record, check_at_ms=check_at)\n        return record\n"
        ),
        tests=(
            AT_LEASE_WRITE + "test_a_duplicate_of_a_message_whose_lease_wrote_the_execution_"
            "calls_nothing",
            AT_LEASE_WRITE + "test_a_message_still_in_its_lane_at_the_check_runs_once_beside_the_"
            "copy_sent_again",
        ),
    ),
    Mutation(
        name="watch-check-passes-over-unwritten-occurrences",
        breaks=(
            "1. nothing due is lost (issue 26: an unrecorded occurrence whose message was lost "
            "is written and sent again at its check)"
        ),
        path=SWEEPER,
        old=(
            "            indexed += sum(1 for ref in found.unwritten"
            " if self._write_unstarted(ref, cutoff))\n"
        ),
        new="",
        tests=(
            AT_LEASE_WRITE + "test_a_lost_message_is_written_pending_by_the_watch_check_sent_"
            "again_and_run_once",
            "tests/chaos/test_chaos_dispatch.py::"
            "test_s3_messages_lost_after_the_execution_is_written_are_sent_again[lease-writes]",
        ),
    ),
    Mutation(
        name="watch-check-writes-an-occurrence-its-edit-decided",
        breaks=(
            "8. edits decide (issue 26: the watch check writes an unrecorded occurrence only "
            "while its job, active, still fires then)"
        ),
        path=SWEEPER,
        old=("        if job.status != JobStatus.ACTIVE or not fires_at(job, scheduled):\n"),
        new="        if False:\n",
        tests=(
            AT_LEASE_WRITE + "test_a_lost_message_of_a_job_paused_since_is_not_written_or_sent_"
            "again",
        ),
    ),
    Mutation(
        name="claim-leaves-a-slot-holders-record-to-its-lease",
        breaks=(
            "1. nothing due is lost (issue 26: an occurrence that holds its job's overlap slot "
            "is written by its claim, which the next claim reads)"
        ),
        path=CLAIMER,
        old="            and not overlap_rule(job.overlap).holds_slot\n",
        new="",
        tests=(
            AT_LEASE_WRITE + "test_an_occurrence_of_a_job_that_holds_its_slot_is_written_by_its_"
            "claim",
        ),
    ),
    Mutation(
        name="unrecorded-message-sent-back-unwritten",
        breaks=(
            "1. nothing due is lost (issue 26: a worker that sends an unrecorded occurrence back "
            "writes it pending first)"
        ),
        path=RUNNER,
        old="        if message.recorded:\n            return message\n",
        new="        if True:\n            return message\n",
        tests=(
            AT_LEASE_WRITE + "test_a_message_a_worker_sends_back_unleased_has_its_execution_"
            "written_pending_first",
        ),
    ),
    Mutation(
        name="regions-keep-the-profiles-record-at-lease",
        breaks=(
            "issue 26: across regions the claim writes each execution (the region fault "
            "scenarios prove that path only)"
        ),
        path="infra/context.py",
        old="            tuning=replace(_tuning(node), record_at_lease=False, due_cursor=False)\n",
        new="            tuning=replace(_tuning(node), due_cursor=False)\n",
        tests=(
            "tests/infra/test_infra_regions.py::"
            "test_the_seed_profiles_record_at_lease_gives_way_to_regions",
        ),
    ),
    Mutation(
        name="late-item-written-where-the-cursor-passes",
        breaks=(
            "1. nothing due is lost (issue 26: an item due within the late margin of its "
            "writer's clock is a late item, which no cursor passes)"
        ),
        path=DUE_STORE,
        old="        return due < now + timedelta(seconds=self.late_margin_sec)\n",
        new="        return due < now\n",
        tests=(CURSOR + "test_an_item_due_within_the_margin_is_a_late_item_claimed_and_deleted",),
    ),
    Mutation(
        name="cursor-passes-an-item-the-claim-left",
        breaks=(
            "1. nothing due is lost (issue 26: the cursor passes only the run of items the "
            "claim finished)"
        ),
        path=DUE_STORE,
        old=(
            "            if item.late or item.due_key > read.whole_through or item.due_key not "
            "in done:\n"
        ),
        new="            if item.late or item.due_key > read.whole_through:\n",
        tests=(
            CURSOR + "test_the_cursor_stops_at_an_item_the_claim_left_and_what_it_fired_past_it_is_"
            "deleted",
        ),
    ),
    Mutation(
        name="cursor-passes-what-a-fair-read-skipped",
        breaks=(
            "1. nothing due is lost (issue 26: the cursor passes only what the claim's read "
            "read whole)"
        ),
        path=DUE_STORE,
        old=(
            "            if item.late or item.due_key > read.whole_through or item.due_key not "
            "in done:\n"
        ),
        new="            if item.late or item.due_key not in done:\n",
        tests=(CURSOR + "test_a_fair_read_lets_the_cursor_pass_only_what_it_read_whole",),
    ),
    Mutation(
        name="moved-cursor-leaves-the-finished-items",
        breaks=(
            "index bounded (issue 26: a claim whose cursor move is refused deletes what it "
            "finished)"
        ),
        path=DUE_STORE,
        old=(
            "        if passed == read.cursor or not self._pass(read.partition, read.cursor, "
            "passed):\n            return list(finished)\n"
        ),
        new=(
            "        if passed == read.cursor or not self._pass(read.partition, read.cursor, "
            "passed):\n            return []\n"
        ),
        tests=(
            CURSOR + "test_a_claim_that_finds_the_cursor_moved_meanwhile_deletes_every_item_it_"
            "finished",
        ),
    ),
    Mutation(
        name="cursor-moved-from-wherever-it-is",
        breaks=(
            "3. no double dispatch (issue 26: a claim moves the cursor only from where it read it)"
        ),
        path=DUE_STORE,
        old='        condition = "attribute_not_exists(#at)" if not cursor else "#at = :c"\n',
        new='        condition = "attribute_not_exists(#at)" if not cursor else "#at >= :c"\n',
        tests=(
            CURSOR + "test_a_claim_that_finds_the_cursor_moved_meanwhile_deletes_every_item_it_"
            "finished",
        ),
    ),
    Mutation(
        name="claim-reads-from-before-the-cursor",
        breaks="3. no double dispatch (issue 26: a claim reads only past the cursor)",
        path=DUE_STORE,
        old="        ahead = self._read_range(partition, late.cursor, high, unreadable)\n",
        new="        ahead = self._read_range(partition, None, high, unreadable)\n",
        also=(
            (
                "        ahead = self._fair_range(partition, late.cursor, high, page, pages, "
                "unreadable)\n",
                "        ahead = self._fair_range(partition, None, high, page, pages, "
                "unreadable)\n",
            ),
        ),
        tests=(CURSOR + "test_a_later_claim_reads_past_the_cursor_and_fires_nothing_twice",),
    ),
    Mutation(
        name="probe-sees-what-the-cursor-passed",
        breaks="issue 26: the ticker's probe looks past the cursor (a claim a second otherwise)",
        path=DUE_STORE,
        old="        return bool(late.items) or self._any(partition, late.cursor, high)\n",
        new="        return bool(late.items) or self._any(partition, None, high)\n",
        tests=(CURSOR + "test_a_later_claim_reads_past_the_cursor_and_fires_nothing_twice",),
    ),
    Mutation(
        name="passed-minute-never-empty",
        breaks=(
            "issue 26: a minute whose items the cursor passed is empty (the watermark moves "
            "past it)"
        ),
        path=DUE_STORE,
        old="        return not self._read_first(partition, late.cursor, _AHEAD_END).items\n",
        new="        return not self._read_first(partition, None, _AHEAD_END).items\n",
        tests=(
            CURSOR
            + "test_the_ticker_claims_through_the_cursor_and_moves_the_watermark_past_a_claimed_"
            "minute",
        ),
    ),
    Mutation(
        name="passed-items-never-expire",
        breaks="index bounded (issue 26: every due item written with a cursor has an expiry)",
        path=DUE_STORE,
        old='            item[EXPIRES] = {"N": str(self.cursor.expiry(minute))}\n',
        new="",
        tests=(CURSOR + "test_a_claim_passes_the_items_it_fired_with_one_write_and_deletes_none",),
    ),
    Mutation(
        name="cursor-item-never-expires",
        breaks="index bounded (issue 26: a partition's cursor item expires with its items)",
        path=DUE_STORE,
        # A string expiry, which DynamoDB's time to live ignores.
        old='        values = {":to": {"S": to}, ":e": {"N": str(self.cursor.expiry(minute))}}\n',
        new='        values = {":to": {"S": to}, ":e": {"S": str(self.cursor.expiry(minute))}}\n',
        tests=(CURSOR + "test_a_claim_passes_the_items_it_fired_with_one_write_and_deletes_none",),
    ),
    Mutation(
        name="late-margin-inside-the-claims-reach",
        breaks="1. nothing due is lost (issue 26: the late margin outreaches every claim)",
        path="layers/takt/config.py",
        old="        if self.due_late_margin_sec <= reach + 2 * self.clock_margin_sec:\n",
        new="        if False:\n",
        tests=(CURSOR + "test_a_late_margin_inside_a_claims_reach_is_refused",),
    ),
    Mutation(
        name="scheduler-sized-for-one-query-a-probe-with-the-cursor",
        breaks=(
            "issue 26: either driver alone keeps up with its probes (two queries a probe with "
            "the claim cursor, twice the memory a shard)"
        ),
        path="infra/functions.py",
        old="    memory_mb_per_due_shard_with_cursor=16,\n",
        new="    memory_mb_per_due_shard_with_cursor=8,\n",
        tests=(
            "tests/infra/test_infra_stateless.py::"
            "test_scheduler_memory_grows_with_the_shard_count_up_to_one_vcpu",
        ),
    ),
    Mutation(
        name="probes-priced-at-one-query-with-the-cursor",
        breaks="issue 26: every cost priced (the cursor's probes are two queries)",
        path="cli/takt_cli/capacity/scenarios.py",
        old="    queries = 2 if calls.due_cursor else 1\n",
        new="    queries = 1\n",
        tests=(
            "tests/unit/capacity/test_capacity_shipped_docs.py::"
            "test_the_shipped_breakdown_is_the_simulators",
        ),
    ),
    Mutation(
        name="claim-deletes-its-stale-items-twice",
        breaks=(
            "issue 26: a claim deletes each stale item once (a second, refused conditional "
            "delete costs a write unit)"
        ),
        path=CLAIMER,
        old=(
            "        self._phases.each(self._delete_stale, self._due.settle(read, fired, gone), "
            "result)\n"
        ),
        new=(
            "        self._phases.each(self._delete_stale, self._due.settle(read, [*fired, "
            "*gone]), result)\n"
        ),
        tests=(CURSOR + "test_a_claim_deletes_a_stale_item_once_and_its_fired_item_at_most_once",),
    ),
    Mutation(
        name="claim-finishes-an-item-whose-advance-was-refused",
        breaks=(
            "1. nothing due is lost (a job whose advance an edit refused on every try still "
            "points at its item: the item is neither deleted nor passed)"
        ),
        path=CLAIMER,
        old="        return [f.item for f, ok in zip(firings, advanced, strict=True) if ok]\n",
        new="        return [f.item for f, ok in zip(firings, advanced, strict=True)]\n",
        tests=(CURSOR + "test_an_item_whose_advance_was_refused_on_every_try_stays_to_claim",),
    ),
    Mutation(
        name="local-stop-logs-on",
        breaks=(
            "issue 29: the line that says takt local stops is its last (an invocation the stop "
            "cuts short logs its failed calls)"
        ),
        path="cli/takt_cli/commands/local.py",
        old="    logging.disable(logging.CRITICAL)\n",
        new="",
        tests=(
            "tests/unit/local/test_local_stop.py::"
            "test_nothing_is_logged_after_the_line_that_says_it_stops",
        ),
    ),
    Mutation(
        name="local-moto-writes-race",
        breaks=(
            "takt local's DynamoDB serializes the writes of an item (racing conditional writes "
            "cannot both pass: a lease, a key rotation, a token)"
        ),
        path="cli/takt_cli/local/moto_speedups.py",
        old="    _serialize_writes()\n",
        new="",
        tests=(
            "tests/unit/local/test_local_moto_speedups.py::"
            "test_racing_conditional_writes_of_one_item_let_exactly_one_pass",
        ),
    ),
    Mutation(
        name="local-runtime-keeps-its-log-levels",
        breaks=(
            "an embedded takt local leaves its process as it found it (a bench's runtime at "
            "ERROR hid every later warning)"
        ),
        path="cli/takt_cli/local/runtime.py",
        old="            logging.getLogger(name).setLevel(level)\n",
        new="            logging.getLogger(name).setLevel(logging.getLogger(name).level)\n",
        tests=(
            "tests/integration/test_local_runtime_environment.py::"
            "test_a_stopped_runtime_leaves_no_takt_settings_behind",
        ),
    ),
)
