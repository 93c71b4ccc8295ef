"""The second stage's order: first-stage candidates merged with the reranker's scores for their texts (the reranker
itself only scores texts; the candidates stay here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..records import Hit, checked_limit

__all__ = ("reranked",)


def reranked(candidates: Sequence[Hit], scores: Sequence[float | None], min_score: float,
             top_k: int | None) -> list[Hit]:
    """Copies of ``candidates``, each with its ``rerank_score`` (``scores[i]`` is the i-th candidate's; None where
    nothing scored it): the scored at or above ``min_score`` by score, ties in first-stage order, then the unscored
    in first-stage order; the scored below ``min_score`` are dropped. Cut to ``top_k`` unless it is None."""
    if top_k is not None:
        checked_limit(top_k)
    pairs = list(zip(candidates, scores, strict=True))
    scored: list[tuple[Hit, float]] = [(c, score) for c, score in pairs if score is not None and score >= min_score]
    scored.sort(key=lambda pair: -pair[1])  # stable: ties keep first-stage order
    ranked = [dataclasses.replace(c, rerank_score=score) for c, score in scored]
    ranked += [dataclasses.replace(c, rerank_score=None) for c, score in pairs if score is None]
    return ranked if top_k is None else ranked[:top_k]
