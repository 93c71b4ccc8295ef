"""Fusion (search/fusion.py): each side standardised before weighing, what a side that returned every match
counts, and a vector side the model cannot read filling after the keyword side."""

from __future__ import annotations

import pytest

from cogs.memory.search.fusion import fuse, fuse_sides


def test_fuse_standardises_each_side_before_weighing() -> None:
    # Raw BM25 scores in the tens must not swamp cosines below 1.
    fused, _ = fuse([(1, 0.9), (2, 0.1)], [(2, 30.0), (1, 10.0)], vector_weight=0.5)
    assert fused[1] == pytest.approx(fused[2])


def test_a_keyword_side_that_returned_every_match_counts_its_weakest_match_above_no_match() -> None:
    # Asked for 4, it found 2: the other 2 of its candidates match nothing and score 0. Standardised among
    # themselves the weaker match would sit at the floor, level with a message that matches nothing.
    fused, floor = fuse([(1, 0.5), (2, 0.5)], [(3, 3.0), (1, 1.0)], vector_weight=0.5, keyword_asked=4)
    assert fused[1] > fused[2]
    # The floor is the z-score of 0 among 3.0, 1.0, 0 and 0 (mean 1, spread sqrt(1.5)), weighed by the keyword side.
    assert floor == pytest.approx(0.5 * 0.0 + 0.5 * (-1.0 / 1.5 ** 0.5))
    # Cut at what it was asked for, more matches may lie below: its weakest hit is the floor, as before.
    cut, _ = fuse([(1, 0.5), (2, 0.5)], [(3, 3.0), (1, 1.0)], vector_weight=0.5, keyword_asked=2)
    assert cut[1] == pytest.approx(cut[2])


def test_fuse_with_one_side_empty_keeps_the_other_sides_order() -> None:
    fused, _ = fuse([], [(5, 3.0), (6, 2.0), (7, 1.0)])
    assert sorted(fused, key=fused.__getitem__, reverse=True) == [5, 6, 7]


def test_a_vector_side_the_model_cannot_read_only_fills_after_the_keyword_side() -> None:
    # An English-only model reads none of this question: its nearest messages rank after every keyword hit.
    fused = fuse_sides("陶艺课的学费是多少？", "latin", [(7, 0.9), (1, 0.8), (8, 0.2)], [(1, 5.0), (2, 1.0)])
    assert (sorted(fused.scores), fused.tail, fused.sources) == ([1, 2], [7, 8], {1: ["keyword"], 2: ["keyword"]})


def test_a_vector_side_the_model_reads_is_fused_with_no_tail() -> None:
    fused = fuse_sides("what does the class cost?", "latin", [(7, 0.9), (1, 0.8)], [(1, 5.0), (2, 1.0)])
    assert (sorted(fused.scores), fused.tail) == ([1, 2, 7], [])
