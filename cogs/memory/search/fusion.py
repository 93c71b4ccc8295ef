"""Fusion: each retriever's scores standardised for the query, then the two sides combined by weight (a hybrid
search weighs the vector side by the share of the query the model reads).

The weights come from ``RankingTuning`` (runtime/ranking.py, measured in docs/ranking.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..language.coverage import covered_share
from ..runtime.ranking import RankingTuning

__all__ = ("Fused", "Hits", "Side", "coordinated", "fuse", "fuse_sides")

Hits = list[tuple[int, float]]
DEFAULT_TUNING = RankingTuning()


def _standardise(hits: Hits, asked: int | None = None) -> tuple[dict[int, float], float]:
    """Z-scores of one retriever's scores for this query, and the score of a message it did not return.

    A side cut at what it was ``asked`` for (or asked for nothing in particular) may have more matches below its
    weakest hit: a missing message scores that weakest hit's z-score, ranked below everything the side kept. A side
    that returned fewer than it was asked for returned everything that matches (the keyword side: every message
    holding a deciding term), so a missing message matches nothing and scores 0: the hits are standardised among the
    ``asked`` candidates, the ones it fell short of scoring 0, and the floor is the z-score of 0. A handful of matches
    then stands out from the messages that match nothing, as a handful among a full list would, rather than being
    spread over the whole scale among themselves. A lone or tied list carries no spread, so its hits count as
    uniformly strong (1.0) over a floor of 0.
    """
    if not hits:
        return {}, 0.0
    scores = np.fromiter((score for _, score in hits), dtype=np.float64, count=len(hits))
    short = 0 if asked is None else max(asked - len(hits), 0)
    population = np.concatenate([scores, np.zeros(short)]) if short else scores
    spread = float(population.std())
    if len(population) < 2 or spread < 1e-9:
        return {rowid: 1.0 for rowid, _ in hits}, 0.0
    mean = float(population.mean())
    standard = {rowid: (score - mean) / spread for rowid, score in hits}
    return standard, (-mean / spread if short else min(standard.values()))


class Side(NamedTuple):
    """One retriever's part in a fusion: its weight, its standardised scores and the score of what it missed."""

    name: str  # "vector" or "keyword"
    weight: float
    scores: dict[int, float]
    floor: float


def _fusion(vector: Hits, keyword: Hits, vector_weight: float,
            keyword_asked: int | None = None) -> tuple[dict[int, float], float, tuple[Side, ...]]:
    sides = tuple(Side(name, weight, *_standardise(hits, asked)) for name, weight, hits, asked in (
        ("vector", vector_weight, vector, None), ("keyword", 1.0 - vector_weight, keyword, keyword_asked)) if hits)
    rowids = set().union(*(side.scores.keys() for side in sides))
    fused = {rowid: sum(weight * scores.get(rowid, floor) for _, weight, scores, floor in sides) for rowid in rowids}
    return fused, sum(weight * floor for _, weight, _, floor in sides), sides


def fuse(vector: Hits, keyword: Hits, vector_weight: float = DEFAULT_TUNING.vector_weight,
         keyword_asked: int | None = None) -> tuple[dict[int, float], float]:
    """Convex combination of the two standardised score lists, and the fused score of a message neither returned;
    ``keyword_asked``: how many hits the keyword side was asked for (``_standardise``).

    A side with no hits contributes nothing, so the other side's order stands.
    """
    fused, floor, _ = _fusion(vector, keyword, vector_weight, keyword_asked)
    return fused, floor


@dataclass(frozen=True, slots=True)
class Fused:
    """One query's fused scores, the score of a message neither side returned, which side found each, the hits
    ranked after every scored message (``tail``, best first), and the sides fused (what ``score_parts`` reads)."""

    scores: dict[int, float]
    floor: float
    sources: dict[int, list[str]]
    tail: list[int] = field(default_factory=list)
    sides: tuple[Side, ...] = ()


def fuse_sides(query: str, scripts: str, vector: Hits, keyword: Hits,
               tuning: RankingTuning = DEFAULT_TUNING, keyword_asked: int | None = None) -> Fused:
    """``fuse`` for a hybrid search, the vector side weighted by the share of ``query`` the model reads (``scripts``).

    When the model reads no more than ``tuning.min_covered_share`` of the query's words and the keyword side found
    something, the vector side's nearest messages are noise at the top: they are left out of the fusion and only
    fill the list after everything the keyword side ranked (and its spread to neighbours), in their own order, so a
    list is never cut short while a side still has candidates for the reranker. A single side (one mode, or one side
    empty) keeps its own order.
    """
    weight, tail = tuning.vector_weight, []
    if vector and keyword:
        share = covered_share(query, scripts)
        if share <= tuning.min_covered_share:
            tail, vector = [rowid for rowid, _ in vector], []
        else:
            weight *= share
    scores, floor, sides = _fusion(vector, keyword, weight, keyword_asked)
    sources: dict[int, list[str]] = {rowid: ["vector"] for rowid, _ in vector}
    for rowid, _ in keyword:
        sources.setdefault(rowid, []).append("keyword")
    return Fused(scores, floor, sources, [rowid for rowid in tail if rowid not in scores], sides)


def coordinated(fused: Fused, shares: dict[int, float], power: float) -> Fused:
    """``fused`` with what each keyword hit scores above the keyword side's floor scaled by its ``shares`` (the
    share of the query it holds, search/coordination.py) to the ``power``, and the fused scores worked out again;
    only where both sides are fused (a keyword search alone keeps its own order). ``power`` 0 changes nothing."""
    if power <= 0.0 or len(fused.sides) < 2:
        return fused
    sides = tuple(side if side.name != "keyword" else side._replace(scores={
        rowid: score if score <= side.floor else side.floor + (score - side.floor) * shares.get(rowid, 1.0) ** power
        for rowid, score in side.scores.items()}) for side in fused.sides)
    scores = {rowid: sum(side.weight * side.scores.get(rowid, side.floor) for side in sides) for rowid in fused.scores}
    return Fused(scores, fused.floor, fused.sources, fused.tail, sides)

