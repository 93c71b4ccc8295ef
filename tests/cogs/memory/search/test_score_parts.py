"""What a first-stage score is made of (ScoreParts): recorded beside the arithmetic, never changing it."""

from __future__ import annotations

import random
import statistics
from collections.abc import Collection

import pytest

from cogs.memory.search.context import Neighbour, Neighbours
from cogs.memory.search.first_stage import score_parts
from cogs.memory.search.fusion import fuse_sides
from cogs.memory.search.loans import spread_to_neighbours, spread_with_loans
from cogs.memory.runtime.ranking import RankingTuning

# Sources 1, 2 and 4 are strong on both sides; 5, the message explained, only on the keyword side.
VECTOR = [(1, 0.9), (2, 0.8), (4, 0.7), (3, 0.1), (8, 0.0)]
KEYWORD = [(1, 9.0), (2, 8.0), (4, 7.0), (5, 1.0), (9, 0.5)]
# 5 follows 1 (a remark: a neighbour's loan), answers 2 (a question: a question's loan), and replies on Discord
# to 4 (a question too: a reply's loan).
NEIGHBOURS: Neighbours = {1: Neighbour(None, 5, (5,), ()), 2: Neighbour(None, 6, (5,), ()),
                          4: Neighbour(None, 7, (5,), ())}
ASKING = {2, 4}
REPLIED = {4: (5,)}


def standardised(hits: list[tuple[int, float]]) -> dict[int, float]:
    scores = [score for _, score in hits]
    mean, spread = statistics.fmean(scores), statistics.pstdev(scores)
    return {rowid: (score - mean) / spread for rowid, score in hits}


def test_a_hit_with_every_kind_of_loan_has_parts_that_add_up_to_its_score() -> None:
    fused = fuse_sides("what does the class cost?", "latin", VECTOR, KEYWORD)
    spread = spread_with_loans(fused.scores, NEIGHBOURS, fused.floor, asking=ASKING, replied=REPLIED)
    parts = score_parts(fused, spread.loans, 5)
    assert min(fused.scores[1], fused.scores[2], fused.scores[4]) > 0.0  # every source lends something
    assert parts.keyword == pytest.approx(standardised(KEYWORD)[5])
    assert parts.vector is None
    weight = RankingTuning().vector_weight
    assert (parts.vector_weight, parts.keyword_weight) == (pytest.approx(weight), pytest.approx(1.0 - weight))
    assert parts.missing == pytest.approx(weight * min(standardised(VECTOR).values()))
    assert parts.neighbour_loan == pytest.approx(0.5 * fused.scores[1])
    assert parts.question_loan == pytest.approx(1.0 * fused.scores[2])
    assert parts.reply_loan == pytest.approx(1.0 * fused.scores[4])
    assert not parts.tail
    assert parts.total == pytest.approx(spread.scores[5], abs=1e-12)


def test_a_message_no_side_returned_starts_from_the_floor() -> None:
    fused = fuse_sides("what does the class cost?", "latin", VECTOR, KEYWORD)
    spread = spread_with_loans(fused.scores, NEIGHBOURS, fused.floor, asking=ASKING, replied=REPLIED)
    parts = score_parts(fused, spread.loans, 6)  # 2's next message: 2 asks, so it lends 6 nothing
    assert (parts.keyword, parts.vector, parts.missing) == (None, None, pytest.approx(fused.floor))
    assert parts.total == pytest.approx(fused.floor)
    assert 6 not in spread.scores


def test_without_discord_replies_a_reply_loan_is_a_question_loan() -> None:
    fused = fuse_sides("what does the class cost?", "latin", VECTOR, KEYWORD)
    parts = score_parts(fused, spread_with_loans(fused.scores, NEIGHBOURS, fused.floor, asking=ASKING).loans, 5)
    assert (parts.question_loan, parts.reply_loan) == (pytest.approx(fused.scores[2] + fused.scores[4]), 0.0)


def spread_as_it_was(scores: dict[int, float], neighbours: Neighbours, floor: float,
                     weights: tuple[float, float], asking: Collection[int], answer_weight: float) -> dict[int, float]:
    """spread_to_neighbours as it stood before loans were recorded, verbatim: the reference the scores must keep."""
    spread, received, replies = dict(scores), {}, {}
    for rowid, (previous, following, answers, following_answers) in neighbours.items():
        score = max(scores[rowid], 0.0)
        if previous is not None and weights[0] * score > 0.0:
            spread[previous] = spread.get(previous, floor) + weights[0] * score
        if rowid in asking:
            replies[rowid] = answers
            for reply in answers:
                received[reply] = received.get(reply, 0.0) + answer_weight * score
        elif following is not None:
            received[following] = received.get(following, 0.0) + weights[1] * score
            if weights[1] * score > 0.0:
                spread[following] = spread.get(following, floor) + weights[1] * score
        if following in asking and following not in neighbours:
            replies[following] = following_answers
    for question, answers in replies.items():
        loan = answer_weight * max(scores.get(question, floor) + received.get(question, 0.0), 0.0)
        if loan > 0.0:
            for reply in answers:
                spread[reply] = spread.get(reply, floor) + loan
    return spread


@pytest.mark.parametrize("seed", range(20))
def test_recording_the_loans_leaves_every_score_as_it_was(seed: int) -> None:
    draw = random.Random(seed)
    rowids = list(range(1, 40))
    scores = {rowid: draw.gauss(0.0, 1.0) for rowid in draw.sample(rowids, 15)}
    neighbours = {rowid: Neighbour(draw.choice([None, rowid - 1]), rowid + 1,
                                   tuple(draw.sample(rowids, 3)), tuple(draw.sample(rowids, 2)))
                  for rowid in draw.sample(sorted(scores), 10)}
    asking = set(draw.sample(rowids, 12))
    replied = {rowid: answers[:1] for rowid, (_, _, answers, _) in neighbours.items()}
    weights, floor = (draw.random(), draw.random()), -draw.random()
    recorded = spread_with_loans(scores, neighbours, floor, weights, asking, 0.8, replied)
    assert recorded.scores == spread_as_it_was(scores, neighbours, floor, weights, asking, 0.8)  # exactly
    assert spread_to_neighbours(scores, neighbours, floor, weights, asking, 0.8) == recorded.scores
    for rowid, loans in recorded.loans.items():
        assert scores.get(rowid, floor) + sum(loans) == pytest.approx(recorded.scores[rowid], abs=1e-12)
