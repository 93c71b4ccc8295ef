"""The times a question names ("yesterday", "last week", "on Monday", "in March", "3 days ago", "2024-05-01", "昨天",
"上周", "三天前", "5月1日"), each as a window of time relative to when it was asked: a small grammar of English and
Chinese, every window timezone-aware UTC, start inclusive and end exclusive. Weeks start on Monday (ISO 8601).

A name for a past time reads as the latest such time not after the question: "in March" asked in May is this year's
March, asked in February last year's; "on Monday" asked on a Monday is that day. A date that does not exist
("31 February", "2024-13-01") names nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import NamedTuple

__all__ = ("DateWindow", "find_windows")


class DateWindow(NamedTuple):
    """A time a question names: its phrase, where it stands in the question, and the days it covers (UTC)."""

    phrase: str
    span: tuple[int, int]
    start: datetime
    end: datetime


_MONTHS = {name: number for number, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), start=1) for name in names}
_WEEKDAYS = {name: number for number, names in enumerate((
    ("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thurs"),
    ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")))
    for name in names}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2,
               "few": 3, "a few": 3}
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9}
_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7, "天": 1, "日": 1, "周": 7, "週": 7, "星期": 7, "个星期": 7,
          "個星期": 7, "礼拜": 7, "个礼拜": 7, "禮拜": 7}

_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY = "|".join(sorted(_WEEKDAYS, key=len, reverse=True))
# An abbreviation alone is a common word ("sun", "sat", "wed"): alone, only a weekday's full name names a day.
_WEEKDAY_FULL = "|".join(name for name in _WEEKDAYS if name.endswith("day"))
_EN_NUMBER = r"\d{1,3}|" + "|".join(sorted(_EN_NUMBERS, key=len, reverse=True))
_ZH_NUMBER = r"\d{1,3}|[零一二两兩三四五六七八九十]{1,3}"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"


def _day(asked: date, offset: int = 0, days: int = 1) -> tuple[date, date]:
    start = asked + timedelta(days=offset)
    return start, start + timedelta(days=days)


def _week(asked: date, back: int) -> tuple[date, date]:
    monday = asked - timedelta(days=asked.weekday() + 7 * back)
    return monday, monday + timedelta(days=7)


def _month(year: int, month: int) -> tuple[date, date]:
    start = date(year, month, 1)
    return start, date(year + month // 12, month % 12 + 1, 1)


def _months_back(asked: date, back: int) -> tuple[date, date]:
    index = asked.year * 12 + asked.month - 1 - back
    return _month(index // 12, index % 12 + 1)


def _year(year: int) -> tuple[date, date]:
    return date(year, 1, 1), date(year + 1, 1, 1)


def _latest_month(asked: date, month: int, year: int | None) -> tuple[date, date]:
    if year is None:
        year = asked.year if month <= asked.month else asked.year - 1
    return _month(year, month)


def _latest_date(asked: date, month: int, day: int, year: int | None) -> tuple[date, date]:
    if year is not None:
        return _day(date(year, month, day))
    for candidate in range(asked.year, asked.year - 5, -1):  # 29 February: the latest leap year before
        try:
            moment = date(candidate, month, day)
        except ValueError:
            continue
        if moment <= asked:
            return _day(moment)
    raise ValueError(f"no {month}/{day} before {asked}")


def _latest_weekday(asked: date, weekday: int, strictly_before: bool = False) -> tuple[date, date]:
    back = (asked.weekday() - weekday) % 7
    return _day(asked, -(back or (7 if strictly_before else 0)))


def _number(word: str) -> int:
    word = word.lower().strip()
    if word.isdigit():
        return int(word)
    if word in _EN_NUMBERS:
        return _EN_NUMBERS[word]
    if "十" in word:  # 十, 十二, 二十, 二十三
        tens, _, ones = word.partition("十")
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    if len(word) == 1 and word in _ZH_DIGITS:
        return _ZH_DIGITS[word]
    raise ValueError(f"not a number: {word!r}")


def _ago(asked: date, count: int, unit: str) -> tuple[date, date]:
    """"3 days ago": that day; "2 weeks ago": that week; "2 months ago", "two years ago": that month, that year."""
    if unit in ("month", "months", "月", "个月", "個月"):
        return _months_back(asked, count)
    if unit in ("year", "years", "年"):
        return _year(asked.year - count)
    days = _UNITS[unit]
    return _week(asked, count) if days == 7 else _day(asked, -count)


def _past(asked: date, count: int, unit: str) -> tuple[date, date]:
    """"the past 3 days", "最近两周": from that many units before the question's day up to and with it."""
    if unit in ("month", "months", "月", "个月", "個月"):
        return _months_back(asked, count)[0], asked + timedelta(days=1)
    return asked - timedelta(days=count * _UNITS[unit]), asked + timedelta(days=1)


Rule = tuple[re.Pattern[str], Callable[[re.Match[str], date], tuple[date, date]]]


def _rule(pattern: str, window: Callable[[re.Match[str], date], tuple[date, date]], latin: bool = True) -> Rule:
    # Latin phrases stand as whole words; Chinese ones are found inside running text.
    return (re.compile(rf"(?<![\w-])(?:{pattern})(?![\w-])" if latin else pattern, re.IGNORECASE), window)


def _year_of(text: str | None) -> int | None:
    return None if text is None else int(text)


_RULES: tuple[Rule, ...] = (
    # -- absolute: ISO dates, "May 1st (2024)", "1 May (2024)", "in March (2024)", "in 2023"
    _rule(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})", lambda m, d: _day(date(int(m[1]), int(m[2]), int(m[3])))),
    _rule(r"(\d{4})-(\d{1,2})", lambda m, d: _month(int(m[1]), int(m[2]))),
    _rule(rf"(?:on\s+)?(?:the\s+)?({_MONTH})\.?\s+{_ORDINAL}(?:,?\s+(\d{{4}}))?",
          lambda m, d: _latest_date(d, _MONTHS[m[1].lower()], int(m[2]), _year_of(m[3]))),
    _rule(rf"(?:on\s+)?(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?({_MONTH})(?:,?\s+(\d{{4}}))?",
          lambda m, d: _latest_date(d, _MONTHS[m[2].lower()], int(m[1]), _year_of(m[3]))),
    _rule(rf"({_MONTH})\s+(\d{{4}})", lambda m, d: _month(int(m[2]), _MONTHS[m[1].lower()])),
    # A month's name alone is a common word too ("may", "march"): it names a month after a preposition.
    _rule(rf"since\s+({_MONTH})", lambda m, d: (_latest_month(d, _MONTHS[m[1].lower()], None)[0],
                                                d + timedelta(days=1))),
    _rule(rf"(?:in|during|last|this)\s+({_MONTH})", lambda m, d: _latest_month(d, _MONTHS[m[1].lower()], None)),
    _rule(r"(?:in|during)\s+((?:19|20)\d{2})", lambda m, d: _year(int(m[1]))),
    # -- relative days
    _rule(r"the\s+day\s+before\s+yesterday", lambda m, d: _day(d, -2)),
    _rule(r"yesterday|last\s+night", lambda m, d: _day(d, -1)),
    _rule(r"today|tonight|this\s+(?:morning|afternoon|evening)", lambda m, d: _day(d)),
    _rule(rf"({_EN_NUMBER})\s+(days?|weeks?|months?|years?)\s+ago",
          lambda m, d: _ago(d, _number(m[1]), m[2].lower())),
    _rule(rf"(?:in\s+)?the\s+(?:past|last)\s+(?:({_EN_NUMBER})\s+)?(days?|weeks?|months?)",
          lambda m, d: _past(d, _number(m[1] or "1"), m[2].lower())),
    # -- weeks, months, years by name
    _rule(r"last\s+weekend", lambda m, d: _day(_week(d, 1)[0], 5, 2)),
    _rule(r"this\s+weekend", lambda m, d: _day(_week(d, 0)[0], 5, 2)),
    _rule(r"(last|this|previous)\s+(week|month|year)", lambda m, d: _named_period(d, m[2].lower(),
                                                                               0 if m[1].lower() == "this" else 1)),
    _rule(rf"last\s+({_WEEKDAY})", lambda m, d: _latest_weekday(d, _WEEKDAYS[m[1].lower()], strictly_before=True)),
    _rule(rf"(?:on|this)\s+({_WEEKDAY})|({_WEEKDAY_FULL})",
          lambda m, d: _latest_weekday(d, _WEEKDAYS[(m[1] or m[2]).lower()])),
    # -- Chinese: 2024年5月1日, 5月1日 / 5月1号, 2024年5月, 五月, 2023年
    _rule(r"(\d{4})年(\d{1,2})月(\d{1,2})[日号號]", lambda m, d: _day(date(int(m[1]), int(m[2]), int(m[3]))), False),
    _rule(rf"({_ZH_NUMBER})月({_ZH_NUMBER})[日号號]", lambda m, d: _latest_date(d, _number(m[1]), _number(m[2]), None),
          False),
    _rule(r"(\d{4})年(\d{1,2})月", lambda m, d: _month(int(m[1]), int(m[2])), False),
    _rule(r"(?<![上下这這本个個几幾\d零一二两兩三四五六七八九十])([一二三四五六七八九十]{1,2}|\d{1,2})月(?!份?[以之]?[前后後])",
          lambda m, d: _latest_month(d, _number(m[1]), None), False),
    _rule(r"((?:19|20)\d{2})年(?!\d|[零一二两兩三四五六七八九十]{1,3}月)", lambda m, d: _year(int(m[1])), False),
    _rule(r"大前天", lambda m, d: _day(d, -3), False),
    _rule(r"前天", lambda m, d: _day(d, -2), False),
    _rule(r"昨天|昨日|昨晚|昨夜", lambda m, d: _day(d, -1), False),
    _rule(r"今天|今日|今晚|今早|今夜", lambda m, d: _day(d), False),
    _rule(rf"({_ZH_NUMBER})\s*(天|个星期|個星期|星期|个礼拜|个月|個月|周|週|年)[之以]?前",
          lambda m, d: _ago(d, _number(m[1]), m[2]), False),
    _rule(rf"(?:最近|过去|過去)\s*({_ZH_NUMBER})\s*(天|个星期|個星期|星期|周|週|个月|個月)",
          lambda m, d: _past(d, _number(m[1]), m[2]), False),
    _rule(r"(上上|上|这|這|本)(?:个|個)?(?:周|週|星期|礼拜|禮拜)([一二三四五六日天末])",
          lambda m, d: _zh_weekday(d, m[1], m[2]), False),
    _rule(r"(?<![上这這本个個])(?:周|週|星期|礼拜|禮拜)([一二三四五六日天])",
          lambda m, d: _latest_weekday(d, _ZH_WEEKDAYS[m[1]]), False),
    _rule(r"(上上|上|这|這|本)(?:个|個)?(?:周|週|星期|礼拜|禮拜)",
          lambda m, d: _week(d, {"上上": 2, "上": 1}.get(m[1], 0)), False),
    _rule(r"(上上|上|这|這|本)(?:个|個)?月", lambda m, d: _months_back(d, {"上上": 2, "上": 1}.get(m[1], 0)), False),
    _rule(r"今年|去年|前年", lambda m, d: _year(d.year - {"今年": 0, "去年": 1, "前年": 2}[m[0]]), False),
)


def _named_period(asked: date, period: str, back: int) -> tuple[date, date]:
    if period == "week":
        return _week(asked, back)
    if period == "month":
        return _months_back(asked, back)
    return _year(asked.year - back)


def _zh_weekday(asked: date, which: str, day: str) -> tuple[date, date]:
    monday = _week(asked, {"上上": 2, "上": 1}.get(which, 0))[0]
    return _day(monday, _ZH_WEEKDAYS[day], 2 if day == "末" else 1)


def find_windows(question: str, asked_at: datetime) -> list[DateWindow]:
    """The times ``question`` names, in the order they stand, as windows relative to ``asked_at`` (a naive time is
    read as UTC). A phrase already read as part of a longer one is not read again; a date that does not exist is
    skipped."""
    asked = (asked_at.replace(tzinfo=UTC) if asked_at.tzinfo is None else asked_at.astimezone(UTC)).date()
    taken: list[tuple[int, int]] = []
    windows: list[DateWindow] = []
    for match, window in _matches(question):
        if any(match.start() < end and start < match.end() for start, end in taken):
            continue
        try:
            first, last = window(match, asked)
        except (ValueError, KeyError, OverflowError):
            continue
        taken.append(match.span())
        windows.append(DateWindow(match[0], match.span(), _midnight(first), _midnight(last)))
    return sorted(windows, key=lambda found: found.span)


def _matches(question: str) -> Iterator[tuple[re.Match[str], Callable[[re.Match[str], date], tuple[date, date]]]]:
    for pattern, window in _RULES:  # in the rules' order: a longer, more specific phrase is read first
        for match in pattern.finditer(question):
            yield match, window


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)
