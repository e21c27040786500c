"""EventBridge's cron to takt's: the same instants, checked against croniter reading the AWS
expression itself (its Quartz-style `?`, `#` and `L` support), never against takt's own code."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter

from takt.schedule import CronSchedule, preview
from takt_cli.migrate.awscron import from_aws, to_aws
from takt_cli.migrate.model import MappingError

AFTER = datetime(2026, 1, 1, tzinfo=UTC)


def _takt(expr: str, tz: str, count: int) -> list[datetime]:
    return preview(CronSchedule(expr, tz), AFTER, count)


def _croniter(expr: str, tz: str, count: int) -> list[datetime]:
    """croniter on the AWS expression's first five fields, with AWS's weekday numbers written
    in croniter's (Sunday 0) by hand in each case below."""
    start = AFTER.astimezone(ZoneInfo(tz))
    it = croniter(expr, start)
    return [t.astimezone(UTC) for t in islice(it.all_next(datetime), count)]


@pytest.mark.parametrize(
    ("aws", "oracle", "tz"),
    [
        ("0 10 ? * MON-FRI *", "0 10 * * mon-fri", "Europe/London"),
        ("0/15 9-17 ? * 2-6 *", "0/15 9-17 * * 1-5", "America/New_York"),
        ("30 6 1,15 * ? *", "30 6 1,15 * *", "UTC"),
        ("0 12 L * ? *", "0 12 L * *", "Asia/Tokyo"),
        ("0 8 ? * 2#1 *", "0 8 * * 1#1", "Europe/Berlin"),
        ("0 8 ? JAN,JUL 6#1 *", "0 8 * 1,7 5#1", "UTC"),
        ("45 23 ? * 1,7 *", "45 23 * * 0,6", "Australia/Sydney"),
        ("0 0 */5 * ? *", "0 0 */5 * *", "UTC"),
    ],
)
def test_an_aws_cron_fires_when_croniter_says_the_aws_expression_does(
    aws: str, oracle: str, tz: str
) -> None:
    assert _takt(from_aws(aws).expr, tz, 40) == _croniter(oracle, tz, 40)


def test_a_year_becomes_a_window_of_start_and_end_in_the_zone() -> None:
    cron = from_aws("0 9 1 * ? 2027-2028")
    start, end = cron.window("America/New_York")

    assert (start, end) == (
        datetime(2027, 1, 1, tzinfo=ZoneInfo("America/New_York")),
        datetime(2028, 12, 31, 23, 59, 59, 999000, tzinfo=ZoneInfo("America/New_York")),
    )
    runs = preview(
        CronSchedule(cron.expr, "America/New_York"), AFTER, 30, start_at=start, end_at=end
    )
    assert len(runs) == 24
    assert runs[0] == datetime(2027, 1, 1, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("aws", "words"),
    [
        ("0 8 ? * 6#3 *", "only the first weekday"),
        ("0 8 ? * 6L *", "last such day"),
        ("0 8 15W * ? *", "nearest"),
        ("0 8 LW * ? *", "nearest"),
        ("0 8 L-3 * ? *", "plain 'L'"),
        ("0 8 1 * ? 2026,2028", "range of years"),
        ("0 8 * * *", "six fields"),
        ("0 8 ? * */2 *", "write the days"),
        ("0 8 ? * 9 *", "out of AWS's range"),
    ],
)
def test_what_takt_cannot_say_is_refused_with_the_reason(aws: str, words: str) -> None:
    with pytest.raises(MappingError, match=words.replace("(", r"\(")):
        from_aws(aws)


@pytest.mark.parametrize(
    ("takt", "aws"),
    [
        ("0 10 * * mon-fri", "0 10 ? * 2,3,4,5,6 *"),
        ("*/15 * * * *", "*/15 * * * ? *"),
        ("0 6 1,15 * *", "0 6 1,15 * ? *"),
        ("0 9 * * 5-7", "0 9 ? * 1,6,7 *"),
        ("@daily", "0 0 * * ? *"),
        ("0 0 L * *", "0 0 L * ? *"),
        ("0 8 */31,1-7 * 1", "0 8 ? * 2#1 *"),
        ("0 30 9 * * *", "30 9 * * ? *"),
    ],
)
def test_takt_cron_maps_back_to_aws(takt: str, aws: str) -> None:
    assert to_aws(takt) == aws


@pytest.mark.parametrize("takt", ["0 0 13 * fri", "15 0 9 * * *", "0 0 */2 * sat"])
def test_takt_cron_aws_cannot_say_is_not_exported(takt: str) -> None:
    with pytest.raises(MappingError):
        to_aws(takt)


@pytest.mark.parametrize(
    "aws", ["0 10 ? * MON-FRI *", "0/15 9-17 ? * 2-6 *", "0 8 ? * 2#1 *", "0 12 L * ? *"]
)
def test_a_round_trip_through_takt_keeps_the_instants(aws: str) -> None:
    again = from_aws(to_aws(from_aws(aws).expr)).expr
    assert _takt(again, "Europe/Paris", 30) == _takt(from_aws(aws).expr, "Europe/Paris", 30)
