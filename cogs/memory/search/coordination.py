"""Coordination: the share of a query's terms a keyword hit holds, each term weighed by its rarity in the hit's
channel (its IDF there, search/informative.py's vocabulary), so that fusion can weigh a hit that repeats one word of
the question ("new phone day!!" for "which phone did Jo get?") as the partial match it is.

BM25 sums what each query term contributes, saturated in its frequency and normalised by length: a three-word
message holding one rare term of a four-term question can outscore a longer one holding two. The classic remedy is
the coordination factor (the share of the query's terms a document holds, Lucene's classic similarity), here
weighed by IDF. A term counts as held when the message or its author's name holds it (the keyword side matches
both), compared by stem as the keyword side's terms are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

import Stemmer

from .informative import NO_VOCABULARY, MIN_MESSAGES, Vocabulary, terms_of
from .terms import bm25_idf

__all__ = ("coordination", "held_share")

_STEMMER = Stemmer.Stemmer("porter")


def _key(term: str) -> str:
    return _STEMMER.stemWord(term) if term.isascii() else term


@lru_cache(maxsize=32_768)
def _held(content: str, author: str) -> frozenset[str]:
    """The keys (``_key``) of the terms a message and its author's name hold, kept per text as terms_of is."""
    return frozenset(_key(term) for term in (*terms_of(content), *terms_of(author)))


def held_share(query_terms: tuple[str, ...], content: str, author: str, known: Vocabulary = NO_VOCABULARY) -> float:
    """The IDF-weighted share of ``query_terms`` (informative.terms_of of the query) that ``content`` or ``author``
    holds, in a channel whose vocabulary is ``known``: 1.0 for a query with no term (nothing to share)."""
    if not query_terms:
        return 1.0
    held = _held(content, author)
    lowered = content.lower()
    unseen = bm25_idf(max(known.messages, MIN_MESSAGES), 0)
    total = share = 0.0
    for term in query_terms:
        weight = known.idf.get(term, unseen)
        total += weight
        # A bigram-script term is held inside a message's own bigrams, which terms_of cuts differently.
        if _key(term) in held or (not term.isascii() and term in lowered):
            share += weight
    return share / total if total > 0.0 else 1.0


def coordination(query: str, hits: Iterable[int], contents: Mapping[int, tuple[str, str, int]],
                 vocabularies: Mapping[int, Vocabulary]) -> dict[int, float]:
    """``held_share`` of each of ``hits`` found in ``contents`` (row id → content, author name, channel id), against
    its channel's vocabulary where ``vocabularies`` holds it (else every term counts as unseen, equally)."""
    query_terms = terms_of(query)
    return {rowid: held_share(query_terms, content, author, vocabularies.get(channel, NO_VOCABULARY))
            for rowid in hits if rowid in contents
            for content, author, channel in (contents[rowid],)}
