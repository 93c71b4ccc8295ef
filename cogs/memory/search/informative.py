"""Informativeness: how much a message says of its own, read from its searchable terms and their rarity in its
channel, so that a content-free message ("nice", "gg", "lol", "ok", an emoji, a bare link) lends and borrows little
or nothing through the loans (search/loans.py).

A message's terms are the keyword side's (language/keywords.keyword_terms: stop words, stray letters and link
parts shaped away, one per stem); each counts its IDF in the channel's recent messages (search/terms.bm25_idf, the
keyword side's IDF), divided by the most a term can count there (a term no message holds), so a term is worth from 0
(in half the messages or more) to 1 (unseen). A message worth ``nothing_at`` such units or less says nothing of its
own (0), one worth ``full_at`` or more is fully informative (1), linearly between: "nice" in a chat where one message
in fifty says it is worth ~0.55 of a term, "the picnic moved to saturday" ~2.3. Measured in docs/loans.md.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import NamedTuple

from ..language import keywords as text
from .terms import bm25_idf

__all__ = ("NO_VOCABULARY", "Vocabulary", "informativeness", "scaled", "terms_of", "vocabulary", "worth")

# A link says where, not what: its parts ("https", "com", "watch") are not the message's own words.
_LINK = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
# Discord's mention, channel and emoji markup (<@123>, <#123>, <:name:123>).
_MARKUP = re.compile(r"<(?:[@#][!&]?|a?:\w+:)\d+>")


class Vocabulary(NamedTuple):
    """How many of a channel's recent messages hold each term (by ``terms_of``), and how many were read; ``idf``
    each of those terms' IDF there, worked out once when the channel is read (``vocabulary``: a search asks for some
    2,800 terms' worth)."""

    messages: int
    counts: Mapping[str, int]
    idf: Mapping[str, float]


# Rarity reads as if a channel held at least this many messages (the ones it lacks holding none of the terms): in a
# channel of three messages every word is in a third of them, which says nothing of how common it is in chat.
MIN_MESSAGES = 100


@lru_cache(maxsize=32_768)
def terms_of(content: str) -> tuple[str, ...]:
    """A message's own searchable terms: its keyword terms once links and Discord markup are taken out."""
    return tuple(text.keyword_terms(_MARKUP.sub(" ", _LINK.sub(" ", content))))


def vocabulary(contents: Iterable[str]) -> Vocabulary:
    """The document count of each term over ``contents`` (a channel's recent messages)."""
    counts: Counter[str] = Counter()
    messages = 0
    for content in contents:
        messages += 1
        counts.update(terms_of(content))
    rows = max(messages, MIN_MESSAGES)
    return Vocabulary(messages, counts, {term: bm25_idf(rows, min(count, rows)) for term, count in counts.items()})


NO_VOCABULARY = vocabulary(())


def worth(content: str, known: Vocabulary) -> float:
    """A message's terms' worth: each term its IDF in the channel (``known``) over the IDF of a term no message
    holds there, summed; 0 for a message with no term of its own."""
    terms = terms_of(content)
    if not terms:
        return 0.0
    rows = max(known.messages, MIN_MESSAGES)
    most = math.log((rows + 0.5) / 0.5)
    unseen, idf = bm25_idf(rows, 0), known.idf
    return sum(idf.get(term, unseen) for term in terms) / most


def informativeness(content: str, known: Vocabulary, nothing_at: float, full_at: float) -> float:
    """From 0 (worth ``nothing_at`` or less) to 1 (worth ``full_at`` or more), linearly between; 1 for every
    message when ``full_at`` is 0 (the rule switched off)."""
    if full_at <= 0.0:
        return 1.0
    return scaled(worth(content, known), nothing_at, full_at)


def scaled(value: float, nothing_at: float, full_at: float) -> float:
    """A worth (``worth``) as informativeness: 0 at ``nothing_at`` or less, 1 at ``full_at`` or more, linearly
    between (``full_at`` above 0)."""
    if full_at <= nothing_at:
        return 1.0 if value > nothing_at else 0.0
    return min(max((value - nothing_at) / (full_at - nothing_at), 0.0), 1.0)
