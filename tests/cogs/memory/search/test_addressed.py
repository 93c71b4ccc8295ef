"""search/context.py's ``addressed``: where Discord replies say whom a question and the answer it guesses address,
the guess keeps all of its loan or none of it (docs/loans.md, "Whom a reply addresses")."""

from __future__ import annotations

import pytest

from cogs.memory.search.context import CONVERSING, Neighbour, addressed
from cogs.memory.search.loans import spread_with_loans
from cogs.memory.search.structure import EXCHANGE_WINDOW, Posted, exchanges
from cogs.memory.store.rows import CandidateRow

ANN, BEN, CAL = 1, 2, 3


def row(rowid: int, author: int, reply_to: int | None = None) -> CandidateRow:
    """Row ``rowid`` of one channel, its Discord message id ``100 + rowid`` (a reply names a message id)."""
    return CandidateRow(100 + rowid, 1, 10, None, author, str(author), "", 0.0,
                        None if reply_to is None else 100 + reply_to)


def test_a_guess_that_replies_to_the_asker_keeps_all_and_one_that_replies_to_another_nothing() -> None:
    # Ann asks (2) after a line of her own (1); Ben's 3 replies to her line 1: he answers her. Cal's 4 replies to
    # Ben's 5, someone else's line: not an answer to Ann.
    rows = {1: row(1, ANN), 2: row(2, ANN), 3: row(3, BEN, reply_to=1), 4: row(4, CAL, reply_to=5), 5: row(5, BEN)}
    neighbours = {2: Neighbour(1, 3, (3,), ()), 6: Neighbour(None, 2, (), (4,))}
    assert addressed(neighbours, rows) == {(2, 3): 1.0, (2, 4): 0.0}


def test_a_question_that_replies_to_someone_is_answered_by_them_and_by_no_one_else() -> None:
    # Ann's question 2 replies to Ben's 1: Ben's 4 answers it, Cal's 3, which replies to nothing, does not.
    rows = {1: row(1, BEN), 2: row(2, ANN, reply_to=1), 3: row(3, CAL), 4: row(4, BEN)}
    assert addressed({2: Neighbour(1, 3, (3, 4), ())}, rows) == {(2, 3): 0.0, (2, 4): 1.0}


def test_a_pair_no_reply_speaks_for_is_left_to_the_channel_s_structure() -> None:
    # Nobody replies, or the message replied to is not among the rows read: nothing is said of the pair.
    rows = {1: row(1, BEN), 2: row(2, ANN), 3: row(3, CAL), 4: row(4, CAL, reply_to=9)}
    assert addressed({2: Neighbour(1, 3, (3,), ()), 3: Neighbour(2, 4, (4,), ())}, rows) == {}


def test_two_who_just_replied_to_each_other_are_talking_and_the_guess_between_them_keeps_its_loan() -> None:
    # Ben replied to Ann (message 2 to 1); then Cal spoke. Ann asks (4) and Ben answers (5), neither replying.
    posted = [Posted(101, ANN, None, False), Posted(102, BEN, 101, False), Posted(103, CAL, None, False),
              Posted(104, ANN, None, True), Posted(105, BEN, None, False)]
    talking = exchanges(posted)
    assert talking.talking(104, ANN, BEN) and talking.talking(104, BEN, ANN)
    assert talking.talking(104, ANN, CAL) is False and talking.talking(999, ANN, BEN) is None
    rows = {4: row(4, ANN), 5: row(5, BEN), 6: row(6, CAL)}
    assert addressed({4: Neighbour(3, 5, (5,), ())}, rows, {10: talking}) == {(4, 5): CONVERSING}
    # Cal, who replied to no one, is left to the channel's structure; so is every pair without the channel's read,
    # and a question Ann puts to everyone (not to Ben).
    assert addressed({4: Neighbour(3, 6, (6,), ())}, rows, {10: talking}) == {}
    assert addressed({4: Neighbour(3, 5, (5,), ())}, rows) == {}
    rows[4] = rows[4]._replace(content="what is everyone having for dinner")
    assert addressed({4: Neighbour(3, 5, (5,), ())}, rows, {10: talking}) == {}


def test_an_exchange_longer_ago_than_the_window_says_nothing() -> None:
    # Ben replied to Ann, then EXCHANGE_WINDOW messages by Cal came before Ann's question; a self-reply joins no one.
    posted = [Posted(1, ANN, None, False), Posted(2, BEN, 1, False),
              *(Posted(3 + n, CAL, 3 + n - 1 if n else None, False) for n in range(EXCHANGE_WINDOW)),
              Posted(100, ANN, None, True)]
    assert exchanges(posted).talking(100, ANN, BEN) is False
    assert exchanges(posted).talking(100, ANN, BEN, within=EXCHANGE_WINDOW + 1) is True
    assert exchanges(posted).talking(100, CAL, CAL) is False


def test_what_a_reply_says_of_a_pair_overrides_what_the_channel_s_structure_guesses() -> None:
    # A group channel: question 1's guessed answers keep 0.25 of its loan (guessed); 2 is addressed to the asker,
    # 3 to someone else.
    neighbours = {1: Neighbour(None, 2, (2, 3), ())}
    spread = spread_with_loans({1: 2.0}, neighbours, 0.0, (0.2, 0.5), {1}, 1.0, {}, {1: 0.0}, None, {1: 0.25},
                               {(1, 2): 1.0, (1, 3): 0.0})
    assert spread.loans[2].question == pytest.approx(2.0)
    assert 3 not in spread.scores
    # Without it (the structure not read, or no reply says anything), the guess keeps the channel's share.
    plain = spread_with_loans({1: 2.0}, neighbours, 0.0, (0.2, 0.5), {1}, 1.0, {}, {1: 0.0}, None, {1: 0.25})
    assert plain.loans[2].question == pytest.approx(0.5) == plain.loans[3].question


def test_an_addressed_answer_keeps_its_loan_however_little_it_says() -> None:
    # "i don't know" (informativeness 0) answers the question that named its author: it keeps the loan, as a Discord
    # reply would; the same words as a mere guess keep nothing.
    neighbours = {1: Neighbour(None, 2, (2,), ())}
    said_little = {2: 0.0}
    named = spread_with_loans({1: 2.0}, neighbours, 0.0, (0.2, 0.5), {1}, 1.0, {}, {1: 1.0}, said_little, None,
                              {(1, 2): 1.0})
    assert named.loans[2].question == pytest.approx(2.0)
    guessed = spread_with_loans({1: 2.0}, neighbours, 0.0, (0.2, 0.5), {1}, 1.0, {}, {1: 1.0}, said_little)
    assert 2 not in guessed.scores


def test_whom_the_answer_replies_to_decides_before_whom_the_question_did() -> None:
    # Ann's question 2 replies to Ben's 1; Ben's 3 replies to Cal's 4: Ben is talking to Cal (IRC: 4.8%).
    rows = {1: row(1, BEN), 2: row(2, ANN, reply_to=1), 3: row(3, BEN, reply_to=4), 4: row(4, CAL)}
    assert addressed({2: Neighbour(1, 3, (3,), ())}, rows) == {(2, 3): 0.0}


def test_an_answer_to_the_asker_of_a_question_put_to_someone_else_is_left_to_the_channel_s_structure() -> None:
    # Ann's question 2 replies to Ben's 1 (she asks Ben); Cal's 3 replies to Ann's 2: a side exchange with the asker,
    # linked 25% of the time on IRC (docs/loans.md), neither all of the loan nor none of it. Ben's 4, replying to Ann,
    # is the one asked answering: all of it. An answer to the asker of a question that replies to her own line, or
    # to no one, keeps all of it as before.
    rows = {1: row(1, BEN), 2: row(2, ANN, reply_to=1), 3: row(3, CAL, reply_to=2), 4: row(4, BEN, reply_to=2)}
    assert addressed({2: Neighbour(1, 3, (3, 4), ())}, rows) == {(2, 4): 1.0}
    rows[2] = row(2, ANN, reply_to=5)
    rows[5] = row(5, ANN)
    assert addressed({2: Neighbour(1, 3, (3, 4), ())}, rows) == {(2, 3): 1.0, (2, 4): 1.0}
    rows[2] = row(2, ANN)
    assert addressed({2: Neighbour(1, 3, (3,), ())}, rows) == {(2, 3): 1.0}
