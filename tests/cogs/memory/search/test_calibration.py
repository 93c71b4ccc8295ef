"""search/structure.py's calibration from Discord replies: a channel's replies label which message answers which,
and what its guessed loans keep follows from them (docs/loans.md, "Calibration from replies")."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from cogs.memory.search.context import Neighbour
from cogs.memory.search.first_stage import ChannelReading
from cogs.memory.search.informative import NO_VOCABULARY
from cogs.memory.search.loans import spread_with_loans
from cogs.memory.search.structure import (ANSWER_PRIOR, BASE_RATE, MIN_REPLIES, NEIGHBOUR_PRIOR, PRIOR_WEIGHT,
                                          Posted, calibrated, lift, measure, reply_lifts, reply_recall)

ANN, BEN, CAL, DEV = 1, 2, 3, 4


def group(rounds: int, answered: bool) -> list[Posted]:
    """Four people in bursts, round after round: Ann asks, Ben answers in two lines (the first a Discord reply to
    her question where ``answered``), Cal says two things and Dev two, Dev's first replying to Cal's last. Authors
    change less often than chance would change them: no dialogue."""
    posted: list[Posted] = []
    for n in range(rounds):
        first = 7 * n + 1
        posted += [Posted(first, ANN, None, True), Posted(first + 1, BEN, first if answered else None, False),
                   Posted(first + 2, BEN, None, False), Posted(first + 3, CAL, None, False),
                   Posted(first + 4, CAL, None, False), Posted(first + 5, DEV, first + 4, False),
                   Posted(first + 6, DEV, None, False)]
    return posted


def test_a_channel_counts_the_guessed_answers_its_replies_confirm() -> None:
    figures = measure([group(10, answered=True)])
    assert figures.dialogue == 0.0
    # Ten questions, each followed by Ben's line, which replies to it; of 69 adjacent pairs, 20 are a reply to the
    # line before (Ben's to Ann's, Dev's to Cal's).
    assert (figures.replying, figures.answers, figures.answers_replied) == (20, 10, 10)
    assert (figures.pairs, figures.pairs_replied) == (69, 20)
    unanswered = measure([group(10, answered=False)])
    assert (unanswered.answers, unanswered.answers_replied, unanswered.replying) == (10, 0, 10)


def test_only_the_guessed_answer_replying_to_its_question_confirms_the_guess() -> None:
    # Ann asks; Ben speaks next (the answer the loan guesses) without replying; Cal's line replies to her question.
    posted = [Posted(1, ANN, None, True), Posted(2, BEN, None, False), Posted(3, CAL, 1, False)]
    assert (measure([posted]).answers, measure([posted]).answers_replied) == (1, 0)
    # Ben's line replying to it confirms the guess.
    replied = [Posted(1, ANN, None, True), Posted(2, BEN, 1, False), Posted(3, CAL, None, False)]
    assert (measure([replied]).answers, measure([replied]).answers_replied) == (1, 1)


def test_few_labels_keep_the_prior_and_many_outweigh_it() -> None:
    assert calibrated(0, 0, ANSWER_PRIOR) == ANSWER_PRIOR
    assert calibrated(2, 2, ANSWER_PRIOR) == pytest.approx((2 + ANSWER_PRIOR * PRIOR_WEIGHT) / (2 + PRIOR_WEIGHT))
    assert calibrated(400, 1000, ANSWER_PRIOR) == pytest.approx(0.4, abs=0.01)
    assert lift(0.146, 0.146) == 0.0 and lift(0.05, 0.146) == 0.0
    assert lift(1.0, 0.146) == 1.0 and lift(0.573, 0.146) == pytest.approx(0.5)


def test_a_channel_whose_members_rarely_reply_keeps_the_rules_of_its_turn_taking() -> None:
    few = measure([group((MIN_REPLIES - 1) // 2, answered=True)])
    assert few.replying < MIN_REPLIES and reply_lifts(few) is None
    many = measure([group(40, answered=True)])
    neighbour, answer = reply_lifts(many) or (0.0, 0.0)
    assert answer == pytest.approx(lift(calibrated(40, 40, ANSWER_PRIOR))) == pytest.approx(0.68, abs=0.01)
    assert neighbour == pytest.approx(lift(calibrated(80, 279, NEIGHBOUR_PRIOR))) == pytest.approx(0.16, abs=0.01)
    # Where the questions go unanswered by reply, a guessed answer is worth no more than any nearby message.
    assert (reply_lifts(measure([group(40, answered=False)])) or (1.0, 1.0))[1] == 0.0


def test_a_guess_is_read_against_the_share_of_links_a_channel_s_replies_mark() -> None:
    # The group above, but Ben replies to Ann's question every other round only and Dev never replies: of 1,110
    # pairs 1 to 4 apart, 20 are linked by a reply, where annotated chat links BASE_RATE of them. Replies mark few
    # of this channel's links, so the half of its guesses they confirm says more than half answer.
    posted: list[Posted] = []
    for n in range(40):
        first = 7 * n + 1
        posted += [Posted(first, ANN, None, True), Posted(first + 1, BEN, first if n % 2 == 0 else None, False),
                   Posted(first + 2, BEN, None, False), Posted(first + 3, CAL, None, False),
                   Posted(first + 4, CAL, None, False), Posted(first + 5, DEV, None, False),
                   Posted(first + 6, DEV, None, False)]
    half = measure([posted])
    assert (half.answers, half.answers_replied, half.nearby, half.nearby_replied) == (40, 20, 1110, 20)
    assert reply_recall(half) == pytest.approx(20 / 1110 / BASE_RATE)
    direct = lift(calibrated(20, 40, ANSWER_PRIOR))
    _, answer = reply_lifts(half) or (0.0, 0.0)
    # 20 confirmed of a 12% share marked: more than all 40, so all 40 count.
    assert answer == pytest.approx(lift(calibrated(40, 40, ANSWER_PRIOR))) and answer > direct + 0.3
    # Fewer than MIN_REPLIES nearby replies say too little of the share they mark: the guesses are read as they are.
    sparse = measure([posted[:7 * 2 * (MIN_REPLIES // 2 - 1)]])
    assert sparse.nearby_replied < MIN_REPLIES and reply_recall(sparse) == 1.0


def test_a_channel_whose_replies_link_more_than_the_base_rate_reads_its_guesses_as_they_are() -> None:
    # Three members in turn, each message a reply to the one before, except that every other question's next
    # message replies past it (to the line before the question): replies link every nearby pair there is to link.
    posted = [Posted(i, i % 3, None if i == 1 else (i - 2 if (i - 1) % 3 == 0 and (i // 3) % 2 == 0 else i - 1),
                     i % 3 == 0) for i in range(1, 241)]
    dense = measure([posted])
    assert dense.nearby_replied / dense.nearby > BASE_RATE and reply_recall(dense) == 1.0
    assert 0 < dense.answers_replied < dense.answers
    _, answer = reply_lifts(dense) or (0.0, 0.0)
    assert answer == pytest.approx(lift(calibrated(dense.answers_replied, dense.answers, ANSWER_PRIOR)))


def test_a_guessed_answer_keeps_what_its_channel_s_replies_say_it_is_worth() -> None:
    # Question 1 (a hit) in a group channel (dialogue 0) is followed by 2, which does not reply to it on Discord.
    neighbours = {1: Neighbour(None, 2, (2,), ())}
    plain = spread_with_loans({1: 2.0}, neighbours, 0.0, (0.2, 0.5), {1}, 1.0, {}, {1: 0.0})
    assert 2 not in plain.scores
    calibrated_loan = spread_with_loans({1: 2.0}, neighbours, 0.0, (0.2, 0.5), {1}, 1.0, {}, {1: 0.0}, None,
                                        {1: 0.25})
    assert calibrated_loan.scores[2] == pytest.approx(0.5)
    assert calibrated_loan.loans[2].question == pytest.approx(0.5)
    # The neighbour spread keeps the dialogue's share: a hit that asks nothing lends its next message nothing.
    assert spread_with_loans({5: 2.0}, {5: Neighbour(4, 6, (), ())}, 0.0, (0.2, 0.5), (), 1.0, {}, {5: 0.0},
                             None, {5: 0.25}).scores == {5: 2.0}


def test_the_first_stage_lends_by_a_channel_s_replies_only_with_reply_calibration(search_engine: Any) -> None:
    replied, silent = measure([group(40, answered=True)]), measure([group(40, answered=False)])
    readings = {10: ChannelReading(replied, NO_VOCABULARY), 11: ChannelReading(silent, NO_VOCABULARY)}
    neighbour, answer = search_engine._dialogue({1: 10, 2: 11}, readings)
    assert replied.dialogue == silent.dialogue == 0.0
    assert answer[1] == pytest.approx(lift(calibrated(40, 40, ANSWER_PRIOR))) and answer[2] == 0.0
    assert neighbour[2] == pytest.approx((reply_lifts(silent) or (0.0, 0.0))[0])
    assert neighbour[1] == pytest.approx((reply_lifts(replied) or (0.0, 0.0))[0])
    search_engine.tuning = replace(search_engine.tuning, reply_calibration=False)
    assert search_engine._dialogue({1: 10, 2: 11}, readings) == ({1: 0.0, 2: 0.0}, {1: 0.0, 2: 0.0})
    search_engine.tuning = replace(search_engine.tuning, read_structure=False)
    assert search_engine._dialogue({1: 10, 2: 11}, readings) == (None, None)
