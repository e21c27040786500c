"""Smoke runs of `takt bench`: the reports are produced and the history check holds.

Speed is not checked here (DESIGN: never a timed assertion in a test); docs/CAPACITY.md has
the measured numbers and the commands that produce them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from takt_cli.commands.main import main


def _bench_local(out: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    """`takt bench local ARGS` run as a user runs it (its own process); its report."""
    command = [sys.executable, "-m", "takt_cli.commands.main", "bench", "local", *args]
    done = subprocess.run(
        [*command, f"--out={out}"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_a_small_local_run_completes_every_execution_once(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    # The run waits for the watchdog to check the claims' watch lists (their reads are part of
    # an execution's cost): a short resend wait and sweep keep that wait to seconds.
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "TAKT_PENDING_RESEND_AFTER_SEC": "10",
        "TAKT_WATCHDOG_INTERVAL_SEC": "1",
    }
    args = ["--stored=20", "--burst=20", "--recurring=4", "--every=2", "--for=4", "--shards=2"]
    report = _bench_local(out, env, *args, "--timeout=120")
    assert report["history"]["ok"] is True
    assert report["history"]["expected"] == 20 + 4 * 2
    assert report["executions"] == 28
    assert report["start_lag_ms"]["p99"] is not None
    per_execution = report["metered_per_execution"]
    assert per_execution["dynamodb_write_units_total"] > 0
    assert per_execution["invocations"]["worker"]["count"] > 0
    # The watch check read every execution once (eventually consistent: half a unit each).
    watch_reads = {
        k: v for k, v in per_execution["dynamodb_read_units"].items() if k.startswith("watch-check")
    }
    assert sum(watch_reads.values()) >= 0.5
    # Entering and leaving the `open` index was 2 units of every execution; now only one that
    # waits past the resend wait enters it (a loaded machine may hold a few that long).
    open_units = sum(
        v for k, v in per_execution["dynamodb_write_units"].items() if "executions/open" in k
    )
    assert open_units < 1.5
    assert report["metered_per_job_created"]["dynamodb_write_units_total"] >= 2
    assert report["cost_per_million_recurring"]["usd_per_million_executions"] > 0


def test_the_seeds_write_path_in_a_local_run_passes_fired_due_items_without_deleting_them(
    tmp_path: Path,
) -> None:
    """The seed profile's write path run by real processes on moto (`takt bench local`): the
    execution written by its lease, and the claim cursor, with a 6 s late margin (burst claims
    off) so that the jobs' next items, 10 s ahead, are passed by it. The history holds, and the
    metered calls show the due table's deletes gone but for the jobs' first items (written at
    their creation, within the margin: late items)."""
    out = tmp_path / "report.json"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "TAKT_PENDING_RESEND_AFTER_SEC": "10",
        "TAKT_WATCHDOG_INTERVAL_SEC": "1",
        "TAKT_RECORD_AT_LEASE": "true",
        "TAKT_DUE_CURSOR": "true",
        "TAKT_DUE_LATE_MARGIN_SEC": "6",
        "TAKT_BURST_AHEAD_SEC": "0",
    }
    args = ["--stored=0", "--recurring=20", "--every=10", "--for=20", "--shards=1"]
    report = _bench_local(out, env, *args)
    assert report["history"]["ok"] is True
    assert report["executions"] == report["history"]["expected"] >= 40
    units = report["metered_per_execution"]["dynamodb_write_units"]
    assert units.get("claimer: takt-due DeleteItem", 0.0) < 0.5  # 1.0 when each is deleted
    puts = {k: v for k, v in units.items() if k.endswith("takt-executions PutItem")}
    assert puts.get("claimer: takt-executions PutItem", 0.0) == 0.0, puts
    # The lease (a worker's record thread: `outside`) writes each execution. On a loaded machine
    # a few are written otherwise: pending by the worker that sends its message back rather than
    # lease it, or by the watchdog when no worker leased it within the resend wait.
    assert sum(puts.values()) >= 1.0 - 1e-6, puts
    assert puts["outside: takt-executions PutItem"] >= 0.75, puts


def test_the_simulator_reports_the_steady_scenario_with_the_seed_s_ten_second_jobs(
    tmp_path: Path,
) -> None:
    out = tmp_path / "sim.json"
    args = ["bench", "simulate", "--scenario", "steady", "--job-seconds", "10", "--out", str(out)]
    assert main(args) == 0
    report = json.loads(out.read_text())
    (steady,) = report["scenarios"]
    assert steady["planned"]["meets_target"] is True
    # The seed profile as shipped (the Fargate worker on its default lane, scaled ahead) holds
    # the seed's steady 1,400/s of 10 s jobs itself.
    assert steady["profile"]["name"] == "seed"
    shipped = steady["as_shipped"]
    assert shipped["job_seconds"] == 10.0
    assert shipped["meets_target"] is True
    assert shipped["start_lag_sec"]["p99"] < 2.0
    assert shipped["not_started"] == 0
    breakdown = shipped["usd_per_million_breakdown"]
    assert _line(breakdown, "Fargate workers") > 0, "the seed ships the Fargate worker"
    assert not [name for name in breakdown if name.startswith("Lambda worker")]
    assert 0 < _line(breakdown, "CloudWatch logs and metrics") <= 0.05, (
        "logs and metrics at most $0.05/M (issue 26): a success is logged only at DEBUG"
    )
    assert shipped["usd_per_million_executions"] == pytest.approx(sum(breakdown.values()), abs=0.01)
    # A 10 s call ends before the seed's first heartbeat (a 45 s lease renewed every 15 s) and
    # before the watchdog's first look: no write beyond the run's own, and no heartbeat line.
    units = steady["dynamodb_units_per_execution"]
    assert units["heartbeat_write_units_per_execution"] == 0.0, (
        "the seed profile's lease spares a 10 s call its heartbeat"
    )
    assert units["recheck_write_units_per_execution"] == 0.0
    assert not [name for name in breakdown if name.startswith("DynamoDB writes: heartbeats")]
    assert steady["planned"]["quotas_and_settings"]
    assert steady["cost_per_hour_usd"]["total"] > 0
    # The same load on Fargate workers scaled ahead: no worker function, a fleet priced by
    # its task-hours, and the quotas it needs named.
    fargate = steady["as_shipped_on_fargate_scaled_ahead"]
    assert fargate["fargate_tasks_scaled_ahead"] > 0 and fargate["not_started"] == 0
    assert _line(fargate["usd_per_million_breakdown"], "Fargate workers") > 0
    assert "Lambda worker" not in fargate["usd_per_million_breakdown"]
    assert "ECS tasks per service (default 5,000)" in fargate["quotas_and_settings"]
    assert "EventBridge Scheduler + a Lambda target making the call" in steady["alternatives"]


def _line(breakdown: dict[str, float], prefix: str) -> float:
    (usd,) = [usd for name, usd in breakdown.items() if name.startswith(prefix)]
    return usd


def test_a_malformed_duration_distribution_is_one_line_and_a_non_zero_exit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["bench", "simulate", "--scenario", "steady", "--job-seconds-dist", "lognormal:10"]

    assert main(args) != 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--job-seconds-dist" in line and "lognormal:MEAN:SIGMA" in line


def test_a_small_noisy_neighbour_run_reports_both_tenants_and_calls_nothing_twice(
    tmp_path: Path,
) -> None:
    out = tmp_path / "noisy.json"
    args = ["--flood=300", "--b-rate=2", "--window=10", "--claim-max=2", f"--out={out}"]
    assert main(["bench", "noisy", *args]) == 0
    report = json.loads(out.read_text())
    assert report["b_alone"]["occurrences"] == 20  # 2 a second for 10 s
    assert report["b_during_flood"]["occurrences"] == 20
    assert report["b_alone"]["start_lag_sec"]["p99"] is not None
    assert report["b_during_flood"]["claim_lag_sec"]["p99"] is not None
    assert report["checks"]["called_twice"] == 0
    assert report["checks"]["b_finished_not_succeeded"] == 0
    assert int(report["a_completed_of_flood"].split()[0]) > 0


def test_the_cli_start_up_bench_reports_each_command_s_cpu() -> None:
    done = subprocess.run(
        [sys.executable, str(Path(__file__).parents[2] / "bench" / "cli_startup.py"), "--runs=1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert len(report["load_average"]) == 3
    assert {key for key in report if key.startswith("takt ")} == {
        "takt --help",
        "takt jobs --help",
        "takt executions --help",
        "takt local --help",
        "takt receive --help",
    }
    assert all(report[key]["cpu_sec_median"] > 0 for key in report if key.startswith("takt "))
