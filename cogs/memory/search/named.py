"""Named: the people, channels and times a question names ("what did @alice say about the trip last week", "in
#general yesterday", "上周 Bob 说了什么"), read against the names of the question's own guild, and the bounded boosts
they give the candidates written by them, in them and then. Never a filter: a strong match elsewhere still ranks (a
member's filter options are SearchFilters, applied by the store).

A member is named by a mention (``<@id>``), by "@name", or by their display name as whole words (inside CJK text for
a CJK name); a plain name must also read as a person rather than a word: it yields keyword terms of its own (a name
that is a stop word never fires), at least three letters in a Latin script, and the store finds it at least as
often as an author's name as in messages (``people``: the keyword side's own rule). A channel is named by a link
(``<#id>``), by "#name", or by its name before "channel" / "频道". Times: language/dates.py. Measured in
docs/ranking.md ("Questions that name people, channels and times").

A member's plain name that opens the question before a ':' or ',' ("CarlFK: is this an install or the LiveCD?",
"Slart, what does BASH do?") is whom the question is put to (``addressee``). The keyword side matches it as any word
of the question, without the score a name adds (its IDF, on every message of its author's), which would lift all
they ever said; here it still names its member as any plain name does, for the bounded boost (the one a question is
put to is the likeliest to answer it). Measured in docs/loans.md ("The name a question is put to").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import NamedTuple

from ..language import keywords as text
from ..language.dates import DateWindow, find_windows
from ..records import Boost
from ..store.rows import CandidateRow

__all__ = ("GuildNames", "NameIndex", "Named", "addressee", "guild_names", "named_boosts", "plain_names",
           "read_question")

_MENTION = re.compile(r"<@!?(\d+)>")
_CHANNEL_LINK = re.compile(r"<#(\d+)>")
_TOKEN = re.compile(r"[^\W_]+(?:[_'.-][^\W_]+)*")
_PIECE = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CHANNEL_WORD = re.compile(r"\s*(?:channel\b|频道|頻道)", re.IGNORECASE)
# What follows a name put to someone: a ':' or ',' and the question's first word.
_ADDRESS_MARK = re.compile(r"\s*[:,]\s*\w")
MIN_LATIN_NAME = 3


def _tokens(value: str) -> tuple[str, ...]:
    return tuple(token.casefold() for token in _TOKEN.findall(value))


Entry = tuple[tuple[str, ...], frozenset[int]]  # a name's tokens, and the members or channels of that name


class NameIndex(NamedTuple):
    """Names by their first token, and the names in a CJK script (found inside running text, not by token)."""

    by_first: Mapping[str, tuple[Entry, ...]]
    cjk: tuple[Entry, ...]

    def present(self, question: str) -> list[Entry]:
        """The names that may stand in ``question``: those whose first token it holds, and the CJK names it holds.
        A question costs a look-up per word, not a pass over every name of a large guild."""
        folded = question.casefold()
        # A name's first word may stand whole ("alice_w") or as a part of a longer token ("Fern's").
        words = dict.fromkeys([*_tokens(question), *_PIECE.findall(folded)])
        found = [entry for token in words for entry in self.by_first.get(token, ())]
        return found + [entry for entry in self.cjk if " ".join(entry[0]) in folded]


def _index(names: Mapping[int, str]) -> NameIndex:
    ids: dict[tuple[str, ...], set[int]] = {}
    for place, name in names.items():
        if tokens := _tokens(name):
            ids.setdefault(tokens, set()).add(place)
    by_first: dict[str, list[Entry]] = {}
    cjk: list[Entry] = []
    for tokens, places in ids.items():
        entry = (tokens, frozenset(places))
        if _CJK.search(" ".join(tokens)):
            cjk.append(entry)
        else:
            by_first.setdefault(tokens[0], []).append(entry)
    return NameIndex({first: tuple(entries) for first, entries in by_first.items()}, tuple(cjk))


class GuildNames(NamedTuple):
    """One guild's members (author id → display name as last stored) and channels (id → name), indexed for matching
    a question against them. Built per guild: no other guild's name is ever read here."""

    members: Mapping[int, str]
    channels: Mapping[int, str]
    member_index: NameIndex
    channel_index: NameIndex


def guild_names(members: Mapping[int, str], channels: Mapping[int, str]) -> GuildNames:
    """``GuildNames`` over one guild's stored members and channels."""
    return GuildNames(dict(members), dict(channels), _index(members), _index(channels))


class Named(NamedTuple):
    """What a question names: members and channels (id → how the question named them) and times; the question as the
    two sides search it (mentions read as names; channel links and "#name" dropped: a place, not a topic); and the
    name it is put to ('' for none: ``addressee``)."""

    authors: Mapping[int, str]
    channels: Mapping[int, str]
    windows: tuple[DateWindow, ...]
    query: str
    addressee: str = ""

    def __bool__(self) -> bool:
        return bool(self.authors or self.channels or self.windows)


def _spans(tokens: tuple[str, ...], question: str) -> Iterable[tuple[int, int, str]]:
    """Where ``tokens`` stand in ``question`` as whole words, or anywhere for a name in a CJK script (written without
    spaces): (start, end, the '@' or '#' written before, or '')."""
    words = r"\s+".join(re.escape(token) for token in tokens)
    cjk = _CJK.search(words) is not None
    pattern = r"([@#]?)" + words if cjk else r"(?<![\w@#])([@#]?)" + words + r"(?!\w)"
    for match in re.finditer(pattern, question, re.IGNORECASE):
        yield match.start(), match.end(), match[1]


def _latin_name(name: str) -> bool:
    """Whether ``name`` (its tokens joined by spaces) is a name in a Latin script that may fire as a plain name: at
    least ``MIN_LATIN_NAME`` letters, and keyword terms of its own (a member called "the" never fires)."""
    return not _CJK.search(name) and len(name) >= MIN_LATIN_NAME and bool(text.keyword_terms(name))


def addressee(question: str, names: GuildNames) -> str:
    """The member's name ``question`` opens with as an address (a plain name, then ':' or ',', then a word); '' for
    none. Of several names that fit, the longest ("Mary Ann, ..." over "Mary")."""
    found, end = "", 0
    opening = len(question) - len(question.lstrip())
    for tokens, _ in names.member_index.present(question):
        name = " ".join(tokens)
        if not _latin_name(name):  # a CJK name is found inside running text, never as an address
            continue
        for start, stop, mark in _spans(tokens, question):
            if start == opening and not mark and stop > end and _ADDRESS_MARK.match(question, stop):
                found, end = name, stop
    return found


def plain_names(question: str, names: GuildNames) -> dict[str, frozenset[int]]:
    """The display names ``question`` holds as whole words without an '@' (or inside CJK text, for a CJK name),
    that pass the length rule and yield keyword terms: each with the members of that name. Whether each reads as a
    person is the store's to say (``people``)."""
    found: dict[str, frozenset[int]] = {}
    folded = question.casefold()
    for tokens, ids in names.member_index.present(question):
        name = " ".join(tokens)
        if _CJK.search(name):
            if len(name.replace(" ", "")) >= 2 and name in folded:
                found[name] = ids
        elif _latin_name(name) and any(mark != "@" for _, _, mark in _spans(tokens, question)):
            found[name] = ids
    return found


def read_question(question: str, names: GuildNames, asked_at: datetime, people: Collection[str] = (),
                  address: bool = True) -> Named:
    """The members, channels and times ``question`` names in this guild (``people``: the plain names that read as
    persons, of ``plain_names``), asked at ``asked_at``; with ``address``, the name it is put to (``addressee``)."""
    authors: dict[int, str] = {}
    channels: dict[int, str] = {}
    searched = question
    for match in _MENTION.finditer(question):
        member = int(match[1])
        if member in names.members:
            authors.setdefault(member, "@" + names.members[member])
    searched = _MENTION.sub(lambda m: names.members.get(int(m[1]), ""), searched)
    for match in _CHANNEL_LINK.finditer(question):
        channels.setdefault(int(match[1]), "#" + names.channels.get(int(match[1]), match[1]))
    searched = _CHANNEL_LINK.sub("", searched)
    for tokens, ids in names.member_index.present(question):
        name = " ".join(tokens)
        for _, _, mark in _spans(tokens, question):
            if mark == "@":  # "@alice": the member meant it; no word rule
                authors.update((member, "@" + name) for member in ids if member not in authors)
        if name in people:
            authors.update((member, name) for member in ids if member not in authors)
    for tokens, ids in names.channel_index.present(searched):
        for start, end, mark in _spans(tokens, searched):
            if mark == "#" or _CHANNEL_WORD.match(searched, end):
                channels.update((channel, "#" + " ".join(tokens)) for channel in ids if channel not in channels)
                searched = searched[:start] + " " * (end - start) + searched[end:]
    windows = tuple(find_windows(question, asked_at))
    return Named(authors, channels, windows, " ".join(searched.split()) or question,
                 addressee(question, names) if address else "")


def named_boosts(named: Named, rows: Mapping[int, CandidateRow], ranked: Collection[int],
                 weight: float) -> dict[int, tuple[Boost, ...]]:
    """Each ranked candidate's boosts: ``weight`` for each kind of name it answers (its author, its channel or its
    thread's parent, its time in a window), times the share of the ranked candidates that do not — a name every
    candidate answers tells them apart no more than one none does (a named speaker of a two-person chat counts half).
    """
    present = [rowid for rowid in ranked if rowid in rows]
    if not named or not present or weight <= 0.0:
        return {}

    def author(row: CandidateRow) -> str | None:
        return named.authors.get(row.author_id)

    def channel(row: CandidateRow) -> str | None:
        return named.channels.get(row.channel_id) or (
            None if row.parent_channel_id is None else named.channels.get(row.parent_channel_id))

    def window(row: CandidateRow) -> str | None:
        return next((found.phrase for found in named.windows
                     if found.start.timestamp() <= row.created_at < found.end.timestamp()), None)

    given: dict[int, list[Boost]] = {}
    for kind, label, asked in ((author, "author {} named in the question", named.authors),
                               (channel, "in {}, named in the question", named.channels),
                               (window, "posted {}, as the question says", named.windows)):
        if not asked:  # nothing of this kind named: no candidate answers it (a search's rows are not read for it)
            continue
        answering = {rowid: found for rowid in present if (found := kind(rows[rowid])) is not None}
        amount = weight * (1.0 - len(answering) / len(present))
        if amount > 0.0:
            for rowid, found in answering.items():
                given.setdefault(rowid, []).append(Boost(label.format(found), amount))
    return {rowid: tuple(boosts) for rowid, boosts in given.items()}
