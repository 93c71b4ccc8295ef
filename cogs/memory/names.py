"""Who and where an admin names within one guild: an id, a mention (``<@id>``, ``<#id>``) or a name, resolved against
what memory knows of that guild alone (members by every name they wrote under, channels by the name last seen) into
one id, an ambiguity with every candidate, or nothing found with the near names. The terminal and the dashboard each
word the answer their own way."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, Protocol

__all__ = ("Ambiguous", "Candidate", "NotFound", "Resolution", "Resolved", "Sign", "channels", "members",
           "mentioned_id", "resolve")

Sign = Literal["@", "#"]

# How many near names a not-found answer offers, and how alike (difflib's ratio) a name must be to count as near.
NEAR_NAMES = 5
NEAR_CUTOFF = 0.5
SNOWFLAKE_END = 2**63  # ids are stored as signed 64-bit integers
# What Discord's client pastes for a member (``<@id>``, ``<@!id>`` in older clients) and for a channel.
_MENTIONS: dict[str, re.Pattern[str]] = {"@": re.compile(r"<@!?([0-9]{1,19})>"), "#": re.compile(r"<#([0-9]{1,19})>")}


class Author(Protocol):
    """One name a member wrote under, as a store (``author_names``) or a source lists it: the id, the name, how many
    messages carry it and the newest one's time."""

    @property
    def author_id(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def messages(self) -> int: ...
    @property
    def last_at(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Candidate:
    """A member or a channel a name may mean: its id, the name (someone typed it: escape it where it is shown), and
    for a member, how many stored messages carry that name and the newest one's time (None and 0 for a channel)."""

    id: int
    name: str
    messages: int | None = None
    last_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Resolved:
    """The one id meant."""

    id: int


@dataclass(frozen=True, slots=True)
class Ambiguous:
    """``wanted`` names several: every one of them once (a member by the newest of their names that match, with
    the messages under those names), most messages first, then by id."""

    wanted: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class NotFound:
    """Nothing in the guild answers to ``wanted``; ``near`` holds the names most like it (at most ``NEAR_NAMES``)."""

    wanted: str
    near: tuple[Candidate, ...]


Resolution = Resolved | Ambiguous | NotFound


def members(names: Iterable[Author]) -> list[Candidate]:
    """One guild's members as candidates, a name each (a store's ``author_names`` rows, or what a source lists)."""
    return [Candidate(author.author_id, author.name, author.messages, author.last_at) for author in names]


def channels(names: Mapping[int, str]) -> list[Candidate]:
    """One guild's channels (and threads) as candidates, from their names by id."""
    return [Candidate(channel_id, name) for channel_id, name in names.items()]


def mentioned_id(text: str, sign: Sign) -> int | None:
    """The id in a mention of the kind ``sign`` says (``<@id>`` or ``<@!id>`` for a member, ``<#id>`` for a
    channel), or None when ``text`` is not one."""
    found = _MENTIONS[sign].fullmatch(text.strip())
    if found is None:
        return None
    number = int(found.group(1))
    return number if 0 < number < SNOWFLAKE_END else None


def resolve(wanted: int | str, candidates: Iterable[Candidate], sign: Sign) -> Resolution:
    """What ``wanted`` means among one guild's ``candidates``: an id (or a mention of ``sign``'s kind) as it is; a
    name, case aside, when exactly one candidate carries it."""
    if isinstance(wanted, int):
        return Resolved(wanted)
    mentioned = mentioned_id(wanted, sign)
    if mentioned is not None:
        return Resolved(mentioned)
    ordered = _ordered(candidates)
    folded = wanted.casefold()
    matches = _ordered(_each_once(candidate for candidate in ordered if candidate.name.casefold() == folded))
    if len(matches) == 1:
        return Resolved(matches[0].id)
    if matches:
        return Ambiguous(wanted, matches)
    close = set(difflib.get_close_matches(folded, [candidate.name.casefold() for candidate in ordered],
                                          n=NEAR_NAMES, cutoff=NEAR_CUTOFF))
    near = tuple(candidate for candidate in ordered if candidate.name.casefold() in close)
    return NotFound(wanted, near[:NEAR_NAMES])


def _ordered(candidates: Iterable[Candidate]) -> tuple[Candidate, ...]:
    return tuple(sorted(candidates, key=lambda candidate: (-(candidate.messages or 0), candidate.id)))


def _each_once(matches: Iterable[Candidate]) -> list[Candidate]:
    """One candidate an id: a member who wrote under several matching names (``Alice``, ``alice``) is shown by the
    newest, with the messages under all of them."""
    by_id: dict[int, Candidate] = {}
    for candidate in matches:
        seen = by_id.get(candidate.id)
        if seen is None:
            by_id[candidate.id] = candidate
            continue
        newest = candidate if candidate.last_at > seen.last_at else seen
        total = None if seen.messages is None else seen.messages + (candidate.messages or 0)
        by_id[candidate.id] = replace(newest, messages=total)
    return list(by_id.values())
