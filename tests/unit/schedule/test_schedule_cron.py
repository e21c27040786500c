"""takt's cron dialect: what parses, what it means, and how refusals read."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pytest

from takt.schedule import (
    CronSchedule,
    DstPolicy,
    ScheduleError,
    parse_cron,
    preview,
    validate_time_zone,
)
from takt.schedule.cron import MAX_EXPRESSION_LENGTH, parse_expression

START = datetime(2026, 1, 1, tzinfo=UTC)


def _first(expr: str, count: int = 4, after: datetime = START) -> list[str]:
    return [
        instant.strftime("%Y-%m-%d %H:%M:%S %a")
        for instant in preview(parse_cron(expr), after, count)
    ]


def _refusal(expr: str) -> str:
    with pytest.raises(ScheduleError) as caught:
        parse_cron(expr)
    assert caught.value.field == "schedule"
    return str(caught.value)


def test_five_fields_are_minute_hour_day_month_weekday() -> None:
    assert _first("30 6 2 1 *", 1) == ["2026-01-02 06:30:00 Fri"]


def test_six_fields_put_seconds_first() -> None:
    assert _first("15 30 6 * * *", 2) == ["2026-01-01 06:30:15 Thu", "2026-01-02 06:30:15 Fri"]


def test_every_second_with_a_seconds_field() -> None:
    assert _first("* * * * * *", 2) == ["2026-01-01 00:00:01 Thu", "2026-01-01 00:00:02 Thu"]


@pytest.mark.parametrize(
    ("macro", "expansion"),
    [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
        ("@Daily", "0 0 * * *"),
    ],
)
def test_macros_mean_their_vixie_expansion(macro: str, expansion: str) -> None:
    assert _first(macro, 3) == _first(expansion, 3)


def test_reboot_is_refused_with_a_reason() -> None:
    assert "@reboot" in _refusal("@reboot")


def test_every_macro_points_at_intervals() -> None:
    assert "interval" in _refusal("@every 5m")


def test_unknown_macro_lists_the_known_ones() -> None:
    assert "@hourly" in _refusal("@wekly")


@pytest.mark.parametrize("expr", ["", "   ", "* * * *", "* * * * * * * *"])
def test_wrong_field_counts_are_refused(expr: str) -> None:
    _refusal(expr)


def test_a_year_field_is_named_as_quartz_syntax() -> None:
    assert "year" in _refusal("0 0 12 * * ? 2026")


def test_question_mark_is_refused_as_quartz() -> None:
    assert "Quartz" in _refusal("0 0 12 ? * MON")


@pytest.mark.parametrize("expr", ["0 0 * * 5#3", "0 0 * * fri#3"])
def test_nth_weekday_is_refused(expr: str) -> None:
    assert "'#'" in _refusal(expr)


@pytest.mark.parametrize(
    "expr", ["0 0 15W * *", "0 0 LW * *", "0 0 * * 5L", "0 0 * * L5", "0 0 L-2 * *"]
)
def test_quartz_last_and_weekday_forms_are_refused(expr: str) -> None:
    assert "'L' and 'W'" in _refusal(expr)


def test_hashed_values_are_refused() -> None:
    assert "'H'" in _refusal("H 0 * * *")


@pytest.mark.parametrize("expr", ["0 0 L * *", "0 0 l * *"])
def test_l_alone_in_day_of_month_is_the_last_day(expr: str) -> None:
    assert _first(expr, 3) == [
        "2026-01-31 00:00:00 Sat",
        "2026-02-28 00:00:00 Sat",
        "2026-03-31 00:00:00 Tue",
    ]


def test_l_in_a_list_adds_the_last_day() -> None:
    assert _first("0 0 15,L 2 *", 3) == [
        "2026-02-15 00:00:00 Sun",
        "2026-02-28 00:00:00 Sat",
        "2027-02-15 00:00:00 Mon",
    ]


def test_l_knows_leap_years() -> None:
    assert _first("0 0 L 2 *", 1, datetime(2028, 1, 1, tzinfo=UTC)) == ["2028-02-29 00:00:00 Tue"]


def test_a_single_value_range_is_that_value() -> None:
    # croniter alone reads "5-5" as every hour; takt hands it an explicit list.
    assert _first("0 5-5 * * *", 2) == ["2026-01-01 05:00:00 Thu", "2026-01-02 05:00:00 Fri"]


def test_value_slash_step_runs_to_the_end_of_the_field() -> None:
    assert _first("10/20 * * * *", 4) == [
        "2026-01-01 00:10:00 Thu",
        "2026-01-01 00:30:00 Thu",
        "2026-01-01 00:50:00 Thu",
        "2026-01-01 01:10:00 Thu",
    ]


def test_range_with_step() -> None:
    assert parse_expression("0-30/10 * * * *").minutes.values == {0, 10, 20, 30}


def test_a_step_beyond_the_field_selects_its_first_value() -> None:
    assert parse_expression("*/999 * * * *").minutes.values == {0}


@pytest.mark.parametrize("expr", ["*/0 * * * *", "*/x * * * *", "*/ * * * *", "1//2 * * * *"])
def test_bad_steps_are_refused(expr: str) -> None:
    _refusal(expr)


@pytest.mark.parametrize(
    ("expr", "field"),
    [
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day-of-month"),
        ("* * 32 * *", "day-of-month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day-of-week"),
        ("60 * * * * *", "second"),
    ],
)
def test_out_of_range_values_name_their_field(expr: str, field: str) -> None:
    assert f"{field} value" in _refusal(expr)


@pytest.mark.parametrize("expr", ["59-0 * * * *", "* * * * fri-mon", "* * * dec-jan *"])
def test_backward_ranges_are_refused(expr: str) -> None:
    assert "backwards" in _refusal(expr)


@pytest.mark.parametrize("expr", ["0,,1 * * * *", "0, * * * *", "-1 * * * *", "*-* * * * *"])
def test_malformed_lists_and_ranges_are_refused(expr: str) -> None:
    _refusal(expr)


def test_only_ascii_digits_are_numbers() -> None:
    _refusal("\u0663 * * * *")


def test_sunday_is_zero_or_seven() -> None:
    assert parse_expression("0 0 * * 7").weekdays.values == {0}
    assert _first("0 0 * * 0", 2) == _first("0 0 * * 7", 2) == _first("0 0 * * sun", 2)


def test_sunday_closes_a_named_range() -> None:
    assert parse_expression("0 0 * * mon-sun").weekdays.values == set(range(7))
    assert parse_expression("0 0 * * 5-7").weekdays.values == {5, 6, 0}
    assert parse_expression("0 0 * * sat-sun").weekdays.values == {6, 0}


# A range that starts at Sunday and is closed by the name `sun` is Sunday alone: Vixie cron reads
# the name as 0, and the `mon-sun` rule (Sunday as 7) is for ranges that start after Sunday.
# croniter 6.2 makes each of these the whole week (and `0-0` too), so these vectors are ours.
SUNDAY_RANGES = {
    "0 0 * * sun-sun": ["2026-01-04 00:00:00 Sun", "2026-01-11 00:00:00 Sun"],
    "0 0 * * 0-sun": ["2026-01-04 00:00:00 Sun", "2026-01-11 00:00:00 Sun"],
    "0 0 * * Sunday-SUN": ["2026-01-04 00:00:00 Sun", "2026-01-11 00:00:00 Sun"],
    "0 0 * * sun-0": ["2026-01-04 00:00:00 Sun", "2026-01-11 00:00:00 Sun"],
    "0 0 * * sun-sun/2": ["2026-01-04 00:00:00 Sun", "2026-01-11 00:00:00 Sun"],
    "0 0 * * fri-sun": [
        "2026-01-02 00:00:00 Fri",
        "2026-01-03 00:00:00 Sat",
        "2026-01-04 00:00:00 Sun",
        "2026-01-09 00:00:00 Fri",
    ],
    "0 0 * * sun-mon": [
        "2026-01-04 00:00:00 Sun",
        "2026-01-05 00:00:00 Mon",
        "2026-01-11 00:00:00 Sun",
        "2026-01-12 00:00:00 Mon",
    ],
}


@pytest.mark.parametrize(("expr", "expected"), SUNDAY_RANGES.items())
def test_a_range_from_sunday_to_sun_is_sunday(expr: str, expected: list[str]) -> None:
    assert _first(expr, len(expected)) == expected


def test_sunday_to_sun_is_not_the_whole_week() -> None:
    assert parse_expression("0 0 * * sun-sun").weekdays.values == {0}
    assert parse_expression("0 0 * * 0-sun").weekdays.values == {0}
    assert parse_expression("0 0 * * 0-7").weekdays.values == set(range(7))


def test_names_are_case_insensitive_and_may_be_whole_words() -> None:
    assert parse_expression("0 0 * JAN-mar Mon-FRIDAY").months.values == {1, 2, 3}
    assert parse_expression("0 0 * * Monday-friday").weekdays.values == {1, 2, 3, 4, 5}


def test_names_only_in_month_and_weekday_fields() -> None:
    _refusal("jan * * * *")
    _refusal("* * * mon *")


def test_restricted_day_fields_combine_with_or() -> None:
    # The 13th of each month, and every Friday.
    assert _first("0 0 13 * fri", 4) == [
        "2026-01-02 00:00:00 Fri",
        "2026-01-09 00:00:00 Fri",
        "2026-01-13 00:00:00 Tue",
        "2026-01-16 00:00:00 Fri",
    ]


def test_a_day_field_starting_with_star_combines_with_and() -> None:
    # Vixie cron: "*/2" is unrestricted, so this is Saturdays that fall on odd days.
    assert _first("0 16 */2 * sat", 3) == [
        "2026-01-03 16:00:00 Sat",
        "2026-01-17 16:00:00 Sat",
        "2026-01-31 16:00:00 Sat",
    ]


def test_a_full_range_not_starting_with_star_is_restricted() -> None:
    # "1-31" is restricted, so it ORs with Monday: every day.
    assert _first("0 0 1-31 * mon", 3) == [
        "2026-01-02 00:00:00 Fri",
        "2026-01-03 00:00:00 Sat",
        "2026-01-04 00:00:00 Sun",
    ]


def test_a_full_week_not_starting_with_star_is_restricted() -> None:
    # "0-6" is restricted, so it ORs with the 13th: every day.
    assert _first("0 0 13 * 0-6", 3) == [
        "2026-01-02 00:00:00 Fri",
        "2026-01-03 00:00:00 Sat",
        "2026-01-04 00:00:00 Sun",
    ]


@pytest.mark.parametrize(
    "expr", ["0 0 30 2 *", "0 0 31 4 *", "0 0 31 2,4,6,9,11 *", "0 0 30,31 2 *"]
)
def test_expressions_that_never_fire_are_refused(expr: str) -> None:
    assert "never fire" in _refusal(expr)


def test_a_day_no_chosen_month_has_is_refused_even_beside_valid_ones() -> None:
    assert "no day 30 in February" in _refusal("0 0 1,30 2 *")


def test_an_impossible_day_or_ed_with_a_weekday_still_fires_on_the_weekday() -> None:
    assert _first("0 0 31 2 sun", 2) == ["2026-02-01 00:00:00 Sun", "2026-02-08 00:00:00 Sun"]


def test_february_29_is_possible() -> None:
    assert _first("0 0 29 2 *", 1) == ["2028-02-29 00:00:00 Tue"]


def test_overlong_expressions_are_refused() -> None:
    expr = "0 0 * * *" + " " * MAX_EXPRESSION_LENGTH
    assert "longer than" in _refusal(expr)


def test_whitespace_is_normalized() -> None:
    assert parse_cron("  0\t6   * * *\n").expr == "0 6 * * *"


def test_errors_quote_the_expression_on_one_line() -> None:
    message = _refusal("0 60 * * *")
    assert message == "invalid cron expression '0 60 * * *': hour value 60 is out of range 0-23"


def test_schedule_error_is_a_value_error_with_a_field() -> None:
    with pytest.raises(ValueError, match="unknown time zone") as caught:
        parse_cron("0 0 * * *", "Mars/Olympus_Mons")
    assert isinstance(caught.value, ScheduleError)
    assert caught.value.field == "time_zone"
    assert caught.value.message == str(caught.value)


def test_schedule_error_survives_pickling() -> None:
    error = ScheduleError("interval", "invalid interval '0s': it must be positive")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.field, copy.message) == (error.field, error.message)


@pytest.mark.parametrize(
    "tz", ["", "Europe", "europe/berlin", "../etc/passwd", "/etc/localtime", "localtime", " UTC"]
)
def test_time_zones_must_be_iana_names(tz: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        validate_time_zone(tz)
    assert caught.value.field == "time_zone"


@pytest.mark.parametrize(
    "tz", ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+7"]
)
def test_valid_time_zones_come_back_unchanged(tz: str) -> None:
    assert validate_time_zone(tz) == tz


def test_a_cron_schedule_checks_itself_when_built() -> None:
    with pytest.raises(ScheduleError):
        CronSchedule("0 0 30 2 *")
    with pytest.raises(ScheduleError):
        CronSchedule("0 0 * * *", tz="Nowhere/City")


@pytest.mark.parametrize(("gap", "overlap"), [("never", "once"), ("run", "thrice")])
def test_unknown_dst_rules_are_refused(gap: str, overlap: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        DstPolicy(gap=gap, overlap=overlap)  # type: ignore[arg-type]
    assert caught.value.field == "dst"


def test_parse_cron_keeps_zone_and_policy() -> None:
    policy = DstPolicy(gap="skip", overlap="twice")
    schedule = parse_cron("0 2 * * *", "Europe/London", policy)
    assert schedule == CronSchedule("0 2 * * *", "Europe/London", policy)
