"""The times a question names, as UTC windows relative to when it was asked (language/dates.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from cogs.memory.language.dates import find_windows

WEDNESDAY = datetime(2024, 5, 15, 12, 0, tzinfo=UTC)
MONDAY = datetime(2024, 5, 13, 9, 0, tzinfo=UTC)


def days(question: str, asked: datetime = WEDNESDAY) -> list[tuple[date, date]]:
    """Each window as (first day, the day after the last)."""
    return [(found.start.date(), found.end.date()) for found in find_windows(question, asked)]


@pytest.mark.parametrize(("question", "first", "after"), [
    ("what did alice say yesterday", date(2024, 5, 14), date(2024, 5, 15)),
    ("what was said today", date(2024, 5, 15), date(2024, 5, 16)),
    ("the day before yesterday", date(2024, 5, 13), date(2024, 5, 14)),
    ("the trip last week", date(2024, 5, 6), date(2024, 5, 13)),
    ("what happened this week", date(2024, 5, 13), date(2024, 5, 20)),
    ("on Monday", date(2024, 5, 13), date(2024, 5, 14)),
    ("last Monday", date(2024, 5, 13), date(2024, 5, 14)),
    ("on Wednesday", date(2024, 5, 15), date(2024, 5, 16)),
    ("3 days ago", date(2024, 5, 12), date(2024, 5, 13)),
    ("two weeks ago", date(2024, 4, 29), date(2024, 5, 6)),
    ("a couple of days ago", date(2024, 5, 13), date(2024, 5, 14)),
    ("in March", date(2024, 3, 1), date(2024, 4, 1)),
    ("in June", date(2023, 6, 1), date(2023, 7, 1)),
    ("since March", date(2024, 3, 1), date(2024, 5, 16)),
    ("last month", date(2024, 4, 1), date(2024, 5, 1)),
    ("last year", date(2023, 1, 1), date(2024, 1, 1)),
    ("in 2022", date(2022, 1, 1), date(2023, 1, 1)),
    ("2024-05-01", date(2024, 5, 1), date(2024, 5, 2)),
    ("on May 9", date(2024, 5, 9), date(2024, 5, 10)),
    ("the 5th of March", date(2024, 3, 5), date(2024, 3, 6)),
    ("the past 3 days", date(2024, 5, 12), date(2024, 5, 16)),
])
def test_english_times(question: str, first: date, after: date) -> None:
    assert days(question) == [(first, after)]


@pytest.mark.parametrize(("question", "first", "after"), [
    ("昨天王芳说了什么", date(2024, 5, 14), date(2024, 5, 15)),
    ("前天", date(2024, 5, 13), date(2024, 5, 14)),
    ("上周 Bob 说了什么", date(2024, 5, 6), date(2024, 5, 13)),
    ("上个星期", date(2024, 5, 6), date(2024, 5, 13)),
    ("这周", date(2024, 5, 13), date(2024, 5, 20)),
    ("上个月", date(2024, 4, 1), date(2024, 5, 1)),
    ("三天前", date(2024, 5, 12), date(2024, 5, 13)),
    ("两周前", date(2024, 4, 29), date(2024, 5, 6)),
    ("5月1日", date(2024, 5, 1), date(2024, 5, 2)),
    ("十二月", date(2023, 12, 1), date(2024, 1, 1)),
    ("2023年3月", date(2023, 3, 1), date(2023, 4, 1)),
    ("去年", date(2023, 1, 1), date(2024, 1, 1)),
    ("上周一", date(2024, 5, 6), date(2024, 5, 7)),
    ("上周末", date(2024, 5, 11), date(2024, 5, 13)),
    ("周一", date(2024, 5, 13), date(2024, 5, 14)),
])
def test_chinese_times(question: str, first: date, after: date) -> None:
    assert days(question) == [(first, after)]


def test_last_week_asked_on_a_monday_is_the_whole_week_before() -> None:
    assert days("last week", MONDAY) == [(date(2024, 5, 6), date(2024, 5, 13))]
    assert days("上周", MONDAY) == [(date(2024, 5, 6), date(2024, 5, 13))]


def test_last_monday_asked_on_a_monday_is_a_week_before() -> None:
    assert days("last monday", MONDAY) == [(date(2024, 5, 6), date(2024, 5, 7))]


def test_yesterday_on_the_first_of_a_month_is_the_last_day_of_the_month_before() -> None:
    assert days("yesterday", datetime(2024, 3, 1, 8, 0, tzinfo=UTC)) == [(date(2024, 2, 29), date(2024, 3, 1))]


def test_last_month_in_january_is_december_of_the_year_before() -> None:
    assert days("last month", datetime(2024, 1, 10, tzinfo=UTC)) == [(date(2023, 12, 1), date(2024, 1, 1))]
    assert days("上个月", datetime(2024, 1, 10, tzinfo=UTC)) == [(date(2023, 12, 1), date(2024, 1, 1))]


def test_three_days_ago_crosses_a_month_boundary() -> None:
    assert days("3 days ago", datetime(2024, 5, 2, tzinfo=UTC)) == [(date(2024, 4, 29), date(2024, 4, 30))]


def test_windows_are_utc_days_whatever_zone_the_question_was_asked_in() -> None:
    late_in_tokyo = datetime(2024, 5, 15, 1, 0, tzinfo=timezone(timedelta(hours=9)))  # 14 May 16:00 UTC
    found = find_windows("yesterday", late_in_tokyo)
    assert (found[0].start, found[0].end) == (datetime(2024, 5, 13, tzinfo=UTC), datetime(2024, 5, 14, tzinfo=UTC))
    assert find_windows("yesterday", datetime(2024, 5, 15, 12, 0))[0].start.tzinfo is UTC  # naive: read as UTC


@pytest.mark.parametrize("question", [
    "last banana", "32 March", "2024-13-45", "February 30", "may I ask what alice said", "we should march on",
    "the sun was out", "what did sam say", "", "上下左右", "几月",
])
def test_nonsense_and_common_words_name_no_time(question: str) -> None:
    assert days(question) == []


def test_a_phrase_is_read_once_and_several_times_in_order() -> None:
    found = find_windows("in March, or was it 2024-05-01?", WEDNESDAY)
    assert [(window.phrase, window.span) for window in found] == [("in March", (0, 8)), ("2024-05-01", (20, 30))]
