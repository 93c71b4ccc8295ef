"""Reading what a request asks for: ids, dates, limits and a search, each checked and bounded."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..records import MAX_QUERY_CHARS, MAX_RESULTS
from .source import ForgetKind, SearchRequest, SettingsChange

__all__ = ("BROWSE_LIMIT_MAX", "BadParam", "browse_limit", "forget_kind", "optional_date", "optional_id",
           "required_id", "search_request", "settings_change")

SNOWFLAKE_END = 2**63
BROWSE_LIMIT_DEFAULT = 50
BROWSE_LIMIT_MAX = 100
RETENTION_DAYS_MAX = 3650
FORGET_KINDS: tuple[ForgetKind, ...] = ("message", "member", "channel", "guild")
# ASCII digits only: int() and str.isdigit() also take other scripts' digits ("٣" is 3) and superscripts ("²" passes
# isdigit and then fails int()). Twenty digits bound int()'s work; every number here is below 2**63 (19 digits).
_DIGITS = re.compile(r"[0-9]{1,20}")


class BadParam(ValueError):
    """A parameter the caller got wrong; the message says which and what it takes (shown as a 400)."""


def _text(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    return "" if value is None else str(value).strip()


def _number(raw: str) -> int | None:
    """``raw`` as a whole number if it is written in ASCII digits (0-9) alone, else None."""
    return int(raw) if _DIGITS.fullmatch(raw) else None


def optional_id(params: Mapping[str, Any], name: str) -> int | None:
    raw = _text(params, name)
    if not raw:
        return None
    number = _number(raw)
    if number is None or not 0 < number < SNOWFLAKE_END:
        raise BadParam(f"{name} must be a Discord id (a positive whole number in digits 0-9), not {raw[:40]!r}")
    return number


def required_id(params: Mapping[str, Any], name: str) -> int:
    value = optional_id(params, name)
    if value is None:
        raise BadParam(f"{name} is required")
    return value


def optional_date(params: Mapping[str, Any], name: str) -> datetime | None:
    raw = _text(params, name)
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise BadParam(f"{name} must be a date like 2024-05-01 (or 2024-05-01T12:00), not {raw[:40]!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _bounded(params: Mapping[str, Any], name: str, default: int, high: int) -> int:
    raw = _text(params, name)
    if not raw:
        return default
    number = _number(raw)
    if number is None or not 1 <= number <= high:
        raise BadParam(f"{name} must be a whole number from 1 to {high} in digits 0-9, not {raw[:40]!r}")
    return number


def browse_limit(params: Mapping[str, Any]) -> int:
    return _bounded(params, "limit", BROWSE_LIMIT_DEFAULT, BROWSE_LIMIT_MAX)


def _flag(params: Mapping[str, Any], name: str) -> bool | None:
    raw = _text(params, name).lower()
    if not raw:
        return None
    if raw in ("1", "true", "on", "yes"):
        return True
    if raw in ("0", "false", "off", "no"):
        return False
    raise BadParam(f"{name} must be true or false, not {raw[:40]!r}")


def search_request(params: Mapping[str, Any]) -> SearchRequest | None:
    """The search asked for, or None when no query was given (the page shows an empty form)."""
    query = _text(params, "q")
    if not query:
        return None
    if len(query) > MAX_QUERY_CHARS:
        raise BadParam(f"q must be at most {MAX_QUERY_CHARS} characters; it has {len(query)}")
    after, before = optional_date(params, "after"), optional_date(params, "before")
    if after is not None and before is not None and after >= before:
        raise BadParam("after must be earlier than before")
    return SearchRequest(query=query, guild_id=required_id(params, "guild"), channel_id=optional_id(params, "channel"),
                         author_id=optional_id(params, "author"), after=after, before=before,
                         limit=_bounded(params, "limit", 10, MAX_RESULTS), rerank=_flag(params, "rerank") is not False)


def forget_kind(params: Mapping[str, Any]) -> ForgetKind:
    raw = _text(params, "kind")
    for kind in FORGET_KINDS:
        if raw == kind:
            return kind
    raise BadParam(f"kind must be one of {', '.join(FORGET_KINDS)}, not {raw[:40]!r}")


def settings_change(params: Mapping[str, Any]) -> SettingsChange:
    retention = _text(params, "retention_days")
    days = _number(retention) if retention else None
    if retention and (days is None or days > RETENTION_DAYS_MAX):
        raise BadParam(f"retention_days must be a whole number from 0 (keep everything) to {RETENTION_DAYS_MAX} in "
                       "digits 0-9")
    return SettingsChange(auto_recall=_flag(params, "auto_recall"),
                          retention_days=days,
                          forget_on_leave=_flag(params, "forget_on_leave"),
                          store_bot_messages=_flag(params, "store_bot_messages"))
