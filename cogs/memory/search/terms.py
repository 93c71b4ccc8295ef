"""The keyword side's terms, as both stores pick and weigh them: the terms that decide which rows match, the Han
characters searched alone, and a term's IDF as FTS5's bm25() works it out.
"""

from __future__ import annotations

import math

from ..language import keywords as text
from ..runtime.ranking import RankingTuning

__all__ = ("bm25_idf", "characters_alone", "within_budget")

DEFAULT_TUNING = RankingTuning()


def characters_alone(counts: dict[str, int]) -> list[str]:
    """The characters to search alone (text.characters) of the Han bigrams no message holds, unless a bigram that
    is found already holds them: a found word is not counted again through its characters."""
    found = "".join(term for term, count in counts.items() if count > 0)
    alone: list[str] = []
    for term, count in counts.items():
        if count == 0:
            alone.extend(c for c in text.characters(term) if c not in found and c not in counts and c not in alone)
    return alone


def bm25_idf(rows: int, matching: int) -> float:
    """A term's IDF as FTS5's bm25() works it out, over ``rows`` documents of which ``matching`` hold the term: kept
    just above zero for a term in half the rows or more. Both stores score with it."""
    return max(math.log((rows - matching + 0.5) / (matching + 0.5)), 1e-6)


def within_budget(counts: dict[str, int], budget: int = DEFAULT_TUNING.keyword_max_postings) -> list[str]:
    """The terms that decide which rows match, in query order: rarest first while their summed counts (each counted
    to just above ``budget``) fit it. The others only rank the rows these match."""
    kept = set()
    for term in sorted(counts, key=counts.__getitem__):
        if counts[term] <= budget:
            budget -= counts[term]
            kept.add(term)
    return [term for term in counts if term in kept]
