"""The people, channels and times a question names, read against one guild's names, and the bounded boosts they give
(search/named.py). The store's part (whether a plain name reads as a person) and the search: test_named_search.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogs.memory.search.named import guild_names, named_boosts, plain_names, read_question
from cogs.memory.store.rows import CandidateRow

ASKED = datetime(2024, 5, 15, 12, 0, tzinfo=UTC)
ALICE, BOB, SAM_A, SAM_B, OK, THE, XIAOMING = 100, 200, 301, 302, 400, 500, 600
GENERAL, TRIPS, THREAD, CHAT = 10, 11, 12, 13
NAMES = guild_names({ALICE: "Alice", BOB: "bob", SAM_A: "sam", SAM_B: "Sam", OK: "ok", THE: "the", XIAOMING: "小明"},
                    {GENERAL: "general", TRIPS: "trips", CHAT: "闲聊"})


def test_a_mention_names_its_member_and_is_searched_as_the_name() -> None:
    named = read_question(f"what did <@{ALICE}> say about the trip", NAMES, ASKED)
    assert named.authors == {ALICE: "@Alice"}
    assert named.query == "what did Alice say about the trip"


def test_a_mention_of_someone_this_guild_does_not_know_names_nobody_and_leaves_no_id_to_search() -> None:
    named = read_question("what did <@999> say", NAMES, ASKED)
    assert (named.authors, named.query) == ({}, "what did say")


def test_at_name_names_the_member_without_the_word_rule() -> None:
    assert read_question("what did @ok post", NAMES, ASKED).authors == {OK: "@ok"}


def test_a_channel_link_and_hash_name_name_the_channel_and_are_not_searched_as_words() -> None:
    named = read_question(f"in <#{GENERAL}> or #trips, the lake plan", NAMES, ASKED)
    assert named.channels == {GENERAL: "#general", TRIPS: "#trips"}
    assert named.query == "in or , the lake plan"


def test_a_channel_name_before_the_word_channel_names_it_and_alone_does_not() -> None:
    assert read_question("what was said in the trips channel", NAMES, ASKED).channels == {TRIPS: "#trips"}
    assert read_question("在trips频道说了什么", NAMES, ASKED).channels == {}  # not a whole word there
    assert read_question("在闲聊频道李雷说了什么", NAMES, ASKED).channels == {CHAT: "#闲聊"}  # inside CJK text
    assert read_question("闲聊的时候说了什么", NAMES, ASKED).channels == {}
    assert read_question("any general advice on trips", NAMES, ASKED).channels == {}


def test_plain_names_are_whole_words_of_three_letters_or_more_with_keyword_terms() -> None:
    found = plain_names("did alice and sam talk? the ok button, alicent", NAMES)
    # "the" is a stop word (no keyword terms), "ok" too short; "alicent" holds "alice" but not as a whole word.
    assert found == {"alice": frozenset({ALICE}), "sam": frozenset({SAM_A, SAM_B})}


def test_a_plain_name_names_its_member_only_once_the_store_says_it_reads_as_a_person() -> None:
    assert read_question("what did alice say", NAMES, ASKED).authors == {}
    assert read_question("what did alice say", NAMES, ASKED, people={"alice"}).authors == {ALICE: "alice"}


def test_a_name_is_found_before_a_possessive_and_a_name_with_punctuation_whole() -> None:
    names = guild_names({ALICE: "Fern", BOB: "bob_w"}, {})
    assert plain_names("what did people tell Fern's sister, and bob_w?", names) == {
        "fern": frozenset({ALICE}), "bob_w": frozenset({BOB})}


def test_an_ambiguous_name_names_every_member_who_has_it() -> None:
    assert read_question("what did Sam say", NAMES, ASKED, people={"sam"}).authors == {SAM_A: "sam", SAM_B: "sam"}


def test_a_chinese_name_is_found_inside_chinese_text() -> None:
    assert plain_names("上周小明说了什么", NAMES) == {"小明": frozenset({XIAOMING})}
    assert read_question("上周小明说了什么", NAMES, ASKED, people={"小明"}).authors == {XIAOMING: "小明"}


def test_names_come_only_from_the_guild_they_were_read_for() -> None:
    other = guild_names({900: "mallory"}, {90: "secret-plans"})
    named = read_question("what did @mallory say in #secret-plans", NAMES, ASKED, people={"mallory"})
    assert (named.authors, named.channels) == ({}, {})
    assert read_question("what did @mallory say", other, ASKED).authors == {900: "@mallory"}


def test_a_question_that_names_nothing_is_searched_as_written() -> None:
    named = read_question("where is the picnic", NAMES, ASKED)
    assert not named and named.query == "where is the picnic"


def row(rowid: int, author: int, channel: int, when: datetime, parent: int | None = None) -> CandidateRow:
    return CandidateRow(rowid, 1, channel, parent, author, "name", "text", when.timestamp(), None)


YESTERDAY = datetime(2024, 5, 14, 9, 0, tzinfo=UTC)
LONG_AGO = datetime(2024, 1, 2, 9, 0, tzinfo=UTC)
ROWS = {1: row(1, ALICE, GENERAL, YESTERDAY), 2: row(2, BOB, TRIPS, YESTERDAY), 3: row(3, ALICE, TRIPS, LONG_AGO),
        4: row(4, BOB, THREAD, LONG_AGO, parent=GENERAL)}


def test_each_kind_of_name_answered_adds_the_weight_times_the_share_that_does_not_answer_it() -> None:
    named = read_question(f"what did <@{ALICE}> say in #general yesterday", NAMES, ASKED)
    boosts = named_boosts(named, ROWS, ROWS, 1.0)
    # Alice wrote 2 of 4, 2 of 4 are in #general (4 in a thread under it), 2 of 4 were posted yesterday.
    assert {rowid: [boost.reason for boost in given] for rowid, given in boosts.items()} == {
        1: ["author @Alice named in the question", "in #general, named in the question",
            "posted yesterday, as the question says"],
        2: ["posted yesterday, as the question says"],
        3: ["author @Alice named in the question"],
        4: ["in #general, named in the question"],
    }
    assert all(boost.amount == pytest.approx(0.5) for given in boosts.values() for boost in given)


def test_a_name_every_candidate_answers_boosts_nothing() -> None:
    named = read_question("what was said in 2024", NAMES, ASKED)
    assert named_boosts(named, ROWS, ROWS, 1.0) == {}


def test_no_weight_no_boost() -> None:
    named = read_question(f"what did <@{ALICE}> say", NAMES, ASKED)
    assert named_boosts(named, ROWS, ROWS, 0.0) == {}
    assert named_boosts(named, ROWS, ROWS, 2.0)[1][0].amount == pytest.approx(1.0)
