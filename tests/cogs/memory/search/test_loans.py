"""Loans (search/loans.py): what a scored message lends its previous and next message, and a question its answers."""

from __future__ import annotations

import pytest

from cogs.memory.search.fusion import fuse
from cogs.memory.search.loans import spread_to_neighbours, spread_with_loans


def test_spread_to_neighbours_lends_only_positive_scores() -> None:
    spread = spread_to_neighbours({1: 2.0, 2: -1.0}, {1: (None, 3, (3,), ()), 2: (None, 4, (4,), ())}, floor=-1.5,
                                  weights=(0.5, 0.5))
    assert spread[3] == pytest.approx(-1.5 + 1.0) and 4 not in spread


def test_a_hit_lends_more_to_the_reply_after_it_than_to_the_message_before() -> None:
    spread = spread_to_neighbours({2: 1.0}, {2: (1, 3, (3,), ())}, floor=0.0)
    assert (spread[1], spread[3]) == (pytest.approx(0.2), pytest.approx(0.5))


def test_a_question_lends_its_whole_score_to_the_reply_after_it() -> None:
    spread = spread_to_neighbours({2: 1.0, 5: 1.0}, {2: (1, 3, (3,), ()), 5: (4, 6, (6,), ())}, floor=0.0, asking={2})
    assert (spread[1], spread[3]) == (pytest.approx(0.2), pytest.approx(1.0))
    assert (spread[4], spread[6]) == (pytest.approx(0.2), pytest.approx(0.5))


def test_a_question_after_a_hit_passes_what_it_got_on_to_its_reply() -> None:
    # "take it to Hank" (1) -> "is he expensive" (2) -> "he did mine for 80" (3): the question matches nothing.
    spread = spread_to_neighbours({1: 1.0}, {1: (None, 2, (2,), (3,))}, floor=0.0, asking={2})
    assert (spread[2], spread[3]) == (pytest.approx(0.5), pytest.approx(0.5))
    # After a remark the same message passes nothing on.
    assert 3 not in spread_to_neighbours({1: 1.0}, {1: (None, 2, (2,), (3,))}, floor=0.0)


def test_a_question_answered_by_a_question_passes_the_first_ones_loan_on() -> None:
    # "where is it" (1) -> "the gig?" (2) -> "the Fox & Fiddle" (3).
    spread = spread_to_neighbours({1: 1.0}, {1: (None, 2, (2,), (3,))}, floor=0.0, asking={1, 2})
    assert (spread[2], spread[3]) == (pytest.approx(1.0), pytest.approx(1.0))


def test_a_source_that_asks_adds_the_loan_it_got_to_its_own_score() -> None:
    neighbours = {1: (None, 2, (2,), (3,)), 2: (1, 3, (3,), (4,))}
    spread = spread_to_neighbours({1: 1.0, 2: 0.5}, neighbours, floor=0.0, asking={2})
    assert spread[3] == pytest.approx(0.5 + 0.5)  # its own 0.5 and the 0.5 it got from 1


def test_a_question_lends_to_the_next_message_and_to_the_one_asked_past_it() -> None:
    # "which one" (1) is answered by 3, the one asked; 2 is someone else's line in between.
    spread = spread_to_neighbours({1: 1.0}, {1: (None, 2, (2, 3), ())}, floor=0.0, asking={1})
    assert (spread[2], spread[3]) == (pytest.approx(1.0), pytest.approx(1.0))


def test_a_lone_hit_outranks_the_neighbours_it_lends_to() -> None:
    scores, floor = fuse([], [(1, 4.2)])
    spread = spread_to_neighbours(scores, {1: (None, 2, (2,), ())}, floor)
    assert spread[1] > spread[2]


def test_a_discord_reply_to_a_question_borrows_a_share_more_than_the_question() -> None:
    # "when does the ferry leave?" (1) -> (Discord replies) "saturday at nine from pier four" (2) and "lol" (3).
    neighbours = {1: (None, 2, (2, 3), ())}
    spread = spread_with_loans({1: 2.0}, neighbours, -0.5, asking={1}, replied={1: (2, 3)},
                               informative={2: 1.0, 3: 0.0}, reply_lift=0.1)
    assert spread.scores[2] == pytest.approx(-0.5 + 2.0 * 1.1)
    assert spread.loans[2].reply == pytest.approx(2.2)
    assert spread.scores[3] == pytest.approx(-0.5 + 2.2)  # a reply keeps its loan however short (docs/loans.md)
    # Without the lift each reply borrows the question's score alone; a guessed answer never gets the lift.
    assert spread_with_loans({1: 2.0}, neighbours, -0.5, asking={1}, replied={1: (2, 3)},
                             informative={2: 1.0, 3: 0.0}).scores[2] == pytest.approx(1.5)
    guessed = spread_with_loans({1: 2.0}, {1: (None, 2, (2,), ())}, -0.5, asking={1}, reply_lift=0.1)
    assert guessed.scores[2] == pytest.approx(1.5) and guessed.loans[2].question == pytest.approx(2.0)


def test_a_discord_reply_is_given_back_the_keyword_floor_up_to_its_lift() -> None:
    # The keyword side missed the reply (2) and the guess (3): each scores 0.6 under the mean for it.
    unmatched = {2: 0.6, 3: 0.6}
    spread = spread_with_loans({1: 2.0}, {1: (None, 3, (3, 2), ())}, -1.0, asking={1}, replied={1: (2,)},
                               reply_lift=0.1, unmatched=unmatched)
    assert spread.scores[2] == pytest.approx(-1.0 + 2.2 + 0.2)  # given back up to 0.1 of its loan of 2.0
    assert spread.scores[3] == pytest.approx(-1.0 + 2.0)  # a guess is given nothing back
    strong = spread_with_loans({1: 8.0}, {1: (None, 3, (3, 2), ())}, -1.0, asking={1}, replied={1: (2,)},
                               reply_lift=0.1, unmatched=unmatched)
    assert strong.scores[2] == pytest.approx(-1.0 + 8.8 + 0.6)  # all of it, under the cap
    assert spread_with_loans({1: 8.0}, {1: (None, 3, (3, 2), ())}, -1.0, asking={1}, replied={1: (2,)},
                             unmatched=unmatched).scores[2] == pytest.approx(7.0)  # no lift, nothing given back
