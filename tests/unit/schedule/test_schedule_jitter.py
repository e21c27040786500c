"""Jitter offsets: inside the window, the same for every caller, spread over the window; and
`takt schedule preview --jitter` shows them as the scheduler computes them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from takt.models.records import JobRecord
from takt.schedule import jitter_offset
from takt_cli.commands.context import CliContext
from takt_cli.commands.schedule import schedule

instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))
windows = st.integers(min_value=1, max_value=24 * 3600 * 1000).map(
    lambda ms: timedelta(milliseconds=ms)
)


@given(job_id=st.text(min_size=1, max_size=40), nominal=instants, window=windows)
def test_the_offset_is_inside_the_window_in_whole_milliseconds_and_repeatable(
    job_id: str, nominal: datetime, window: timedelta
) -> None:
    offset = jitter_offset(job_id, nominal, window)
    assert timedelta(0) <= offset < window
    assert offset % timedelta(milliseconds=1) == timedelta(0)
    assert jitter_offset(job_id, nominal.astimezone(UTC), window) == offset


def test_a_thousand_jobs_due_at_one_instant_spread_over_the_window() -> None:
    top = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    window = timedelta(minutes=15)
    minutes = [jitter_offset(f"job_{n}", top, window) // timedelta(minutes=1) for n in range(1000)]
    counts = [minutes.count(m) for m in range(15)]
    # Even spread: about 67 a minute; a hash this far off would be broken.
    assert min(counts) > 40
    assert max(counts) < 100


def test_preview_with_a_job_id_shows_the_instants_that_job_fires_at() -> None:
    result = CliRunner().invoke(
        schedule,
        ["preview", "--cron", "0 * * * *", "--after", "2026-12-01T00:00:00Z", "--count", "3",
         "--jitter", "15m", "--job-id", "job_x"],
        obj=CliContext(endpoint="", output="json"),
    )  # fmt: skip
    assert result.exit_code == 0, result.exception
    rows = json.loads(result.stdout)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    job = JobRecord(
        tenant_id="t", job_id="job_x", jitter="15m", anchor=now, target="handler:x",
        created_at=now, updated_at=now,
    )  # fmt: skip
    for row in rows:
        at = datetime.fromisoformat(row["at"])
        assert datetime.fromisoformat(row["fires_at"]) == job.fire_time(at)
