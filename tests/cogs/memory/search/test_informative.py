"""Informativeness (search/informative.py): what a message says of its own, from its terms' rarity in its channel."""

from __future__ import annotations

import pytest

from cogs.memory.search.first_stage import damped
from cogs.memory.search.informative import NO_VOCABULARY, informativeness, terms_of, vocabulary, worth
from cogs.memory.search.loans import spread_with_loans

CHAT = vocabulary(["nice", "nice one", "gg", "lol", "ok", "the new map is huge", "who is online tonight?",
                   "lol same", "nice!", "gg wp", "ok ok", "the picnic moved to saturday at the lake"] * 4)


@pytest.mark.parametrize("content", ["👍", "🎉🎉", "https://youtu.be/dQw4w9WgXcQ", "<@1234> <:pog:5678>", "...",
                                     "ok", "nice"])
def test_a_message_with_no_words_of_its_own_or_a_common_one_says_nothing(content: str) -> None:
    assert informativeness(content, CHAT, 0.5, 1.0) == 0.0


def test_a_link_and_discord_markup_are_not_the_message_s_terms() -> None:
    assert terms_of("look https://example.com/picnic-photos <@42>") == ("look",)


def test_rare_terms_make_a_message_informative_and_common_ones_do_not() -> None:
    assert worth("picnic at the lake", CHAT) > worth("nice", CHAT) > 0.0
    assert informativeness("the picnic moved to saturday", CHAT, 0.5, 1.0) == 1.0


def test_a_term_no_message_holds_counts_in_full() -> None:
    assert worth("zeppelin", CHAT) == pytest.approx(1.0)
    assert worth("zeppelin", NO_VOCABULARY) == pytest.approx(1.0)


def test_full_at_zero_switches_the_rule_off() -> None:
    assert informativeness("👍", CHAT, 0.5, 0.0) == 1.0


def test_a_message_that_says_nothing_borrows_nothing_and_one_that_says_something_borrows_in_full() -> None:
    # A question (1) followed by "nice" (2) and an answer (3) that the question lends to.
    neighbours = {1: (None, 2, (2, 3), ())}
    spread = spread_with_loans({1: 2.0}, neighbours, 0.0, asking={1}, informative={2: 0.0, 3: 1.0})
    assert spread.scores[3] == pytest.approx(2.0)
    assert spread.scores.get(2, 0.0) == 0.0
    # Without the rule "nice" takes the question's whole score.
    assert spread_with_loans({1: 2.0}, neighbours, 0.0, asking={1}).scores[2] == pytest.approx(2.0)


def test_a_short_discord_reply_to_a_question_borrows_in_full() -> None:
    # "does the 22.04 installer support btrfs?" -> (a Discord reply) "yes": the reply says what it answers.
    neighbours = {1: (None, None, (2,), ())}
    spread = spread_with_loans({1: 2.0}, neighbours, 0.0, asking={1}, replied={1: (2,)}, informative={2: 0.0})
    assert spread.scores[2] == pytest.approx(2.0)


def test_a_channel_of_a_few_messages_does_not_make_every_word_common() -> None:
    few = vocabulary(["take your amp to Hank", "is he expensive", "he did mine for 80"])
    assert informativeness("he did mine for 80", few, 0.5, 1.0) == 1.0


def test_what_a_message_scores_above_the_floor_is_kept_by_its_informativeness() -> None:
    kept = damped({1: 3.0, 2: 3.0, 3: -2.0}, -1.0, {1: 0.25, 3: 0.0})
    assert kept == {1: pytest.approx(0.0), 2: 3.0, 3: -2.0}


def test_a_question_that_says_little_keeps_no_loan_but_passes_it_on_to_its_answer() -> None:
    # "take it to Hank" (1) -> "who?" (2, says nothing of its own) -> "Hank at Loud Repairs, he did mine for 80" (3).
    spread = spread_with_loans({1: 1.0}, {1: (None, 2, (2,), (3,))}, 0.0, asking={2}, informative={2: 0.0})
    assert spread.scores.get(2, 0.0) == 0.0
    assert spread.scores[3] == pytest.approx(0.5)
