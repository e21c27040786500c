"""`takt bench`: measure takt locally, price it, and plan its capacity at the seed's scale.

- `takt bench local`: the local runtime on a workload, metered, its history checked (exit 1 when
  any execution was missed, duplicated or failed);
- `takt bench noisy`: the noisy-neighbour scenario (a flooding tenant beside a steady one) on the
  local runtime, with fair dispatch on or off (docs/FAIRNESS.md);
- `takt bench simulate`: the capacity simulator's scenarios, optionally fed with a local
  report's measured calls and cost (`--profile`).

Reports are JSON on stdout (and in `--out`), progress on stderr.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from takt_cli.commands.context import render_table
from takt_cli.commands.errors import CliError

SCENARIOS = ("steady", "top-of-hour", "ten-x")
MOTO_OPTION = click.option(
    "--moto",
    type=click.Choice(["thread", "process"]),
    default="thread",
    show_default=True,
    help="moto's server in this process, or in a child process (another core).",
)
OUT_OPTION = click.option(
    "--out", type=click.Path(path_type=Path), help="Also write the report here."
)


def _emit(report: dict[str, Any], out: Path | None) -> None:
    text = json.dumps(report, indent=2)
    click.echo(text)
    if out is not None:
        out.write_text(text + "\n")


@click.group()
def bench() -> None:
    """Benchmark, price and capacity-plan takt."""


@bench.command("local")
@click.option("--stored", default=1000, show_default=True, help="Idle jobs stored (never due).")
@click.option("--one-off", default=0, show_default=True, help="One-off jobs due as created.")
@click.option("--burst", default=0, show_default=True, help="One-off jobs due in one second.")
@click.option("--recurring", default=0, show_default=True, help="Interval jobs.")
@click.option("--every", default=10, show_default=True, help="Their interval (s).")
@click.option("--for", "duration", default=60, show_default=True, help="How long they fire (s).")
@click.option("--pollers", default=4, show_default=True, help="Pollers per lane.")
@click.option("--shards", default=4, show_default=True, help="Due index shards (N).")
@click.option("--timeout", default=600.0, show_default=True, help="Give up after (s).")
@click.option(
    "--job-seconds",
    default=0.0,
    show_default=True,
    help="How long the target takes to answer each call (s).",
)
@MOTO_OPTION
@OUT_OPTION
def local(
    stored: int,
    one_off: int,
    burst: int,
    recurring: int,
    every: int,
    duration: int,
    pollers: int,
    shards: int,
    timeout: float,
    job_seconds: float,
    moto: str,
    out: Path | None,
) -> None:
    """Run takt locally on a workload and report throughput, lag, metered calls and cost."""
    from takt_cli.local.bench import Bench, Workload  # noqa: PLC0415 - only this command loads the bench and moto
    from takt_cli.local.runtime import FAKE_CREDENTIALS  # noqa: PLC0415 - only this command loads the bench and moto

    if not (one_off or burst or recurring):
        raise CliError("nothing to run: give --one-off, --burst or --recurring")
    for key, value in FAKE_CREDENTIALS.items():
        os.environ.setdefault(key, value)
    workload = Workload(
        stored=stored,
        one_off=one_off,
        burst=burst,
        recurring=recurring,
        every_sec=every,
        duration_sec=duration,
        pollers=pollers,
        due_shards=shards,
        timeout_sec=timeout,
        job_seconds=job_seconds,
        moto_process=moto == "process",
    )
    report = Bench(workload, progress=lambda line: click.echo(line, err=True)).run()
    _emit(report, out)
    history = report["history"]
    click.echo(
        f"{report['executions']} executions, {report['executions_per_sec']}/s, start lag p99 "
        f"{report['start_lag_ms']['p99']} ms (at the target: p50 "
        f"{report['target_start_lag_ms']['p50']} ms, max {report['target_start_lag_ms']['max']} "
        "ms), "
        f"${report['cost_per_million_recurring']['usd_per_million_executions']}/M; history: "
        + ("ok" if history["ok"] else f"WRONG {history}"),
        err=True,
    )
    if not history["ok"]:
        raise CliError("the history check failed: some execution did not run exactly once")


@bench.command("noisy")
@click.option(
    "--flood", default=20_000, show_default=True, help="Tenant A's executions due at once."
)
@click.option("--b-rate", default=10, show_default=True, help="Tenant B's jobs a second.")
@click.option("--b-weight", default=1, show_default=True, help="B's weight (A's is 1).")
@click.option("--window", default=60, show_default=True, help="Each window's length (s).")
@click.option(
    "--fair/--no-fair",
    default=True,
    show_default=True,
    help="Fairness as shipped (bounded, drain-sized claims and shares; docs/FAIRNESS.md), or "
    "off (claims take everything due, no shares).",
)
@click.option(
    "--fair-per-sec",
    type=float,
    default=None,
    help="A fixed dispatch share per weight (a bucket write per tenant per send) on top.",
)
@click.option(
    "--claim-max",
    default=2,
    show_default=True,
    help="A backlogged tenant's due items per claim while the lanes are busy (the floor).",
)
@click.option(
    "--queue-sec",
    type=float,
    default=0.5,
    show_default=True,
    help="Seconds of the lanes' measured drain backlogged tenants may keep queued.",
)
@MOTO_OPTION
@OUT_OPTION
def noisy(
    flood: int,
    b_rate: int,
    b_weight: int,
    window: int,
    fair: bool,
    fair_per_sec: float | None,
    claim_max: int,
    queue_sec: float,
    moto: str,
    out: Path | None,
) -> None:
    """Noisy neighbour: A floods, B runs steadily; B's start lag alone and under the flood."""
    from takt_cli.local.noisy import NoisyBench, NoisyWorkload  # noqa: PLC0415 - only this command loads the bench and moto
    from takt_cli.local.runtime import FAKE_CREDENTIALS  # noqa: PLC0415 - only this command loads the bench and moto

    if flood < 1 or b_rate < 1 or not 1 <= b_weight <= 1000 or window < 10:
        raise CliError(
            "--flood and --b-rate must be positive, --b-weight 1-1000 and --window at least 10"
        )
    if claim_max < 1 or not 0 < queue_sec <= 60 or (fair_per_sec is not None and fair_per_sec <= 0):
        raise CliError(
            "--claim-max must be positive, --queue-sec above 0 and at most 60, --fair-per-sec "
            "positive"
        )
    for key, value in FAKE_CREDENTIALS.items():
        os.environ.setdefault(key, value)
    workload = NoisyWorkload(
        flood=flood,
        b_rate=b_rate,
        b_weight=b_weight,
        window_sec=window,
        fair_dispatch_per_sec=fair_per_sec if fair else None,
        claim_max_items=claim_max if fair else None,
        fair_queue_sec=queue_sec if fair else None,
        moto_process=moto == "process",
    )
    report = NoisyBench(workload, progress=lambda line: click.echo(line, err=True)).run()
    _emit(report, out)
    click.echo(noisy_table(report), err=True)


def noisy_table(report: dict[str, Any]) -> str:
    """The noisy bench's result as docs/CAPACITY.md tabulates it, with the machine's load."""
    alone, flooded = report["b_alone"], report["b_during_flood"]
    rows = [
        {
            "window": name,
            "b_p50_sec": b["start_lag_sec"]["p50"],
            "b_p99_sec": b["start_lag_sec"]["p99"],
            "b_not_started": f"{b['not_started']} of {b['occurrences']}",
            "a_per_sec": a["executions_per_sec"],
        }
        for name, b, a in (
            ("B alone", alone, {"executions_per_sec": "-"}),
            ("A floods beside B", flooded, report["a_with_b"]),
        )
    ]
    rows.append(
        {
            "window": "A alone",
            "b_p50_sec": "-",
            "b_p99_sec": "-",
            "b_not_started": "-",
            "a_per_sec": report["a_alone"]["executions_per_sec"],
        }
    )
    p99_alone, p99_flooded = alone["start_lag_sec"]["p99"], flooded["start_lag_sec"]["p99"]
    settings = report["settings"]
    if p99_alone is None or p99_flooded is None:
        gap = "B had no occurrence in a window"
    else:
        met = "met" if p99_flooded - p99_alone <= 2 else "missed"
        gap = f"B p99 during the flood - alone: {p99_flooded - p99_alone:+.2f} s ({met}: 2 s)"
    verdict = (
        f"{gap}; {report['a_completed_of_flood']} of the flood done; load average "
        f"{settings['load_average_1m_at_start']} at the start, "
        f"{settings['load_average_1m_at_end']} at the end"
    )
    return render_table(rows, list(rows[0])) + "\n" + verdict


@bench.command("simulate")
@click.option(
    "--scenario",
    type=click.Choice([*SCENARIOS, "noisy", "all"]),
    default="all",
    show_default=True,
    help="A seed scenario, the noisy neighbour (docs/FAIRNESS.md), or the three seed ones.",
)
@click.option(
    "--profile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A `takt bench local` report: its measured calls and cost per execution.",
)
@click.option(
    "--job-seconds",
    type=click.FloatRange(min=0.001, max=900),
    default=10.0,
    show_default=True,
    help="How long each job's call takes (the seed's average is 10 s).",
)
@click.option(
    "--job-seconds-dist",
    "job_dist",
    default=None,
    metavar="fixed:MEAN|lognormal:MEAN:SIGMA",
    help="The calls' durations as a distribution, e.g. lognormal:10:1.0 (mean 10 s, p99 62 s); "
    "overrides --job-seconds.",
)
@click.option(
    "--profile-name",
    default=None,
    metavar="NAME",
    help="The deployment profile simulated as shipped (`cdk deploy -c profile=NAME`): seed, "
    "small or tenx; the seed's when not given.",
)
@click.option(
    "-c",
    "--context",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="A context value over the profile's, as `cdk deploy -c` takes it (repeatable).",
)
@OUT_OPTION
def simulate(
    scenario: str,
    profile: Path | None,
    job_seconds: float,
    job_dist: str | None,
    profile_name: str | None,
    overrides: tuple[str, ...],
    out: Path | None,
) -> None:
    """Simulate the seed's scenarios as a profile ships and as planned (N, quotas, cost)."""
    from takt_cli.capacity.cost import metered_components  # noqa: PLC0415 - only this command loads the bench and moto
    from takt_cli.capacity.model import CallProfile, JobDuration, profile_from_report  # noqa: PLC0415 - only this command loads the bench and moto
    from takt_cli.capacity.profiles import ProfileError, load_profile  # noqa: PLC0415 - only this command loads the bench and moto
    from takt_cli.capacity.scenarios import SEED, plan  # noqa: PLC0415 - only this command loads the bench and moto

    try:
        job = JobDuration.parse(job_dist) if job_dist else JobDuration(job_seconds)
    except ValueError as exc:
        raise CliError(f"--job-seconds-dist: {exc}") from None
    if scenario == "noisy" and (profile_name or overrides):
        raise CliError(
            "--scenario noisy simulates its own design (docs/FAIRNESS.md); --profile-name and -c "
            "apply to the seed's scenarios"
        )
    try:
        deployed = load_profile(profile_name, overrides)
        # Read every knob the simulator uses now, so a bad override fails before any run.
        deployed.design()
        deployed.fargate()
        deployed.timed(CallProfile())
    except ProfileError as exc:
        raise CliError(str(exc)) from None
    calls = CallProfile()
    metered: dict[str, float] | None = None
    if profile is not None:
        measured = json.loads(profile.read_text())
        calls = profile_from_report(measured)
        metered = metered_components(measured["cost_per_million_recurring"]["breakdown"])
    calls = replace(calls, target_latency_ms=job.mean_sec * 1000, target_latency_sigma=job.sigma)
    if scenario == "noisy":
        from takt_cli.capacity.scenarios import noisy_neighbour  # noqa: PLC0415 - only this command loads the bench and moto

        click.echo("simulating the noisy neighbour", err=True)
        _emit({"call_profile": calls.__dict__, "scenarios": [noisy_neighbour(calls)]}, out)
        return
    chosen = SEED if scenario == "all" else (SEED[SCENARIOS.index(scenario)],)
    results = []
    for item in chosen:
        click.echo(f"simulating {item.name} on the {deployed.name} profile", err=True)
        results.append(plan(item, calls, metered=metered, profile=deployed))
    _emit({"call_profile": calls.__dict__, "scenarios": results}, out)
