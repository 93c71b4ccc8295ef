"""The people, channels and times a question names, read against one guild's names, and the bounded boosts they give
(search/named.py). The store's part (whether a plain name reads as a person) and the search: test_named_search.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogs.memory.search.named import addressee, guild_names, named_boosts, plain_names, read_question
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


@pytest.mark.parametrize("question, name", [
    ("Alice: is this an install or the LiveCD?", "alice"),
    ("  bob, what does BASH do?", "bob"),
    ("Mary Ann, where did you park?", "mary ann"),  # the longest name that fits
    ("Mary, where did you park?", "mary"),
    ("alice:what was the fix", "alice"),
])
def test_a_name_that_opens_the_question_before_a_colon_or_comma_is_whom_it_is_put_to(question: str, name: str) -> None:
    names = guild_names({ALICE: "Alice", BOB: "bob", 700: "Mary Ann", 701: "Mary"}, {})
    assert addressee(question, names) == name


@pytest.mark.parametrize("question", [
    "what did alice say: the trip or the lake?",  # not at the start
    "alice said what about the trip",  # no ':' or ','
    "@alice: what did you say about the trip",  # a mention: the member chose it
    "alice:",  # nothing asked after it
    "alicent: is it installed",  # not a whole name
    "ok, what was decided",  # too short to read as a name
    "小明：上周说了什么",  # a name in a CJK script is read inside the text, never as an address
])
def test_no_address_where_no_name_opens_the_question_as_one(question: str) -> None:
    assert addressee(question, NAMES) == ""


def test_the_name_a_question_is_put_to_still_names_its_member_and_stays_a_word_of_the_question() -> None:
    put_to = read_question("alice: what did bob say about the trip?", NAMES, ASKED, people={"alice", "bob"})
    assert (put_to.authors, put_to.addressee) == ({ALICE: "alice", BOB: "bob"}, "alice")
    assert put_to.query == "alice: what did bob say about the trip?"
    assert read_question("alice: what did bob say?", NAMES, ASKED, address=False).addressee == ""


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
