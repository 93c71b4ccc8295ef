"""The second stage's order: candidates merged with the reranker's scores for their texts."""

from __future__ import annotations

import pytest

from datetime import UTC, datetime

from cogs.memory.records import Hit
from cogs.memory.search.second_stage import reranked


def candidates(n: int) -> list[Hit]:
    return [Hit(message_id=i, guild_id=1, channel_id=2, author_id=3, author_name="a", content=f"text {i}",
                created_at=datetime(2024, 5, 1, 12, tzinfo=UTC), score=1.0 - i / 100, sources=("keyword",), rank=i + 1)
            for i in range(n)]


def test_scored_come_first_by_score_then_the_unscored_in_first_stage_order() -> None:
    ranked = reranked(candidates(5), [0.2, None, 0.9, None, 0.5], min_score=0.0, top_k=None)
    assert [(c.message_id, c.rerank_score) for c in ranked] == [(2, 0.9), (4, 0.5), (0, 0.2), (1, None),
                                                                       (3, None)]


def test_equal_scores_keep_first_stage_order() -> None:
    ranked = reranked(candidates(3), [0.5, 0.5, 0.5], min_score=0.0, top_k=None)
    assert [c.message_id for c in ranked] == [0, 1, 2]


def test_scored_below_min_score_are_dropped_and_the_unscored_kept() -> None:
    ranked = reranked(candidates(3), [0.1, None, 0.8], min_score=0.5, top_k=None)
    assert [c.message_id for c in ranked] == [2, 1]


def test_top_k_cuts_after_ordering_and_the_input_is_left_alone() -> None:
    given = candidates(3)
    ranked = reranked(given, [None, 0.3, 0.7], min_score=0.0, top_k=2)
    assert ([c.message_id for c in ranked], [c.rerank_score for c in given]) == ([2, 1], [None] * 3)


def test_a_top_k_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        reranked(candidates(2), [0.1, 0.2], min_score=0.0, top_k=0)
