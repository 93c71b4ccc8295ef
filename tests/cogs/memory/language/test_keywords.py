"""Text shaping for search, checked against a real FTS5 table with the schema's tokenizer."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from cogs.memory.store.sqlite.migrations import FTS_TOKENIZER
from cogs.memory.language.keywords import (
    Term,
    embedding_input,
    embedding_query,
    fts_document,
    keyword_terms,
    match_expression,
)

FTS_SCHEMA = f"CREATE VIRTUAL TABLE messages_fts USING fts5(body, author, tokenize = \"{FTS_TOKENIZER}\")"

# FTS5 query syntax a user might type by accident or on purpose.
HOSTILE_QUERIES = [
    'say "hello',
    'pizza AND pasta',
    "pizza OR",
    "NOT pizza",
    "NEAR(pizza pasta, 2)",
    "pizz*",
    "body:pizza",
    "author : alice",
    "{body author}: pizza",
    "^pizza",
    "(pizza",
    "pizza)",
    "- pizza + pasta",
    "'; DROP TABLE messages; --",
    '""""',
    "AND OR NOT NEAR",
    "c'est déjà l'été",
    "\u0000\ufffd\U0001f600",
]


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(FTS_SCHEMA)
    rows = [
        (1, "I had pizza and pasta tonight", "alice"),
        (2, "NOT a word about dinner", "bob"),
        (3, "我喜欢吃北京烤鸭", "li"),
        (4, "東京タワーに行きました", "yuki"),
        (5, "The dogs were running in the park", "carol"),
        (6, "猫", "li"),
    ]
    conn.executemany("INSERT INTO messages_fts (rowid, body, author) VALUES (?, ?, ?)",
                     [(rowid, fts_document(body), author) for rowid, body, author in rows])
    yield conn
    conn.close()


def search(conn: sqlite3.Connection, query: str) -> list[int]:
    expression = match_expression(keyword_terms(query))
    if expression is None:
        return []
    rows = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank", (expression,))
    return [row[0] for row in rows]


def test_fts_document_splits_cjk_runs_into_bigrams() -> None:
    assert fts_document("我喜欢猫") == " 我喜 喜欢 欢猫 猫 "


def test_fts_document_leaves_latin_text_as_written() -> None:
    assert fts_document("Pizza night, 8pm!") == "Pizza night, 8pm!"


def test_fts_document_folds_full_width_letters() -> None:
    assert fts_document("Ｐｉｚｚａ") == "Pizza"


def test_embedding_input_without_previous_is_author_and_text() -> None:
    assert embedding_input("alice", "hello there", None) == "alice: hello there"


def test_embedding_input_puts_the_previous_message_first() -> None:
    text = embedding_input("bob", "yes, Tuesday", ("alice", "are you free?"))
    assert text == "alice: are you free?\nbob: yes, Tuesday"


def test_embedding_input_caps_a_long_previous_message() -> None:
    text = embedding_input("bob", "ok", ("alice", "x" * 5000))
    assert len(text) < 400 and text.endswith("\nbob: ok")


def test_keyword_terms_drop_stop_words_and_stray_letters() -> None:
    assert keyword_terms("When did Caroline's dog go to the vet?") == ["caroline", "dog", "go", "vet"]


def test_keyword_terms_keep_one_word_per_stem() -> None:
    assert keyword_terms("painting paintings painted") == ["painting"]


def test_keyword_terms_of_only_stop_words_are_empty() -> None:
    assert keyword_terms("what did you do?") == []
    assert match_expression([]) is None


def test_author_column_term_matches_only_the_author(fts: sqlite3.Connection) -> None:
    expression = match_expression([Term("alice", column="author")])
    rows = fts.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (expression,)).fetchall()
    assert rows == [(1,)]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_fts5_syntax_in_a_query_never_raises(fts: sqlite3.Connection, query: str) -> None:
    search(fts, query)


def test_operators_in_a_query_are_plain_words(fts: sqlite3.Connection) -> None:
    # "NOT pizza" must find the pizza message, not exclude it.
    assert search(fts, "NOT pizza") == [1]


def test_a_column_filter_in_a_query_is_plain_words(fts: sqlite3.Connection) -> None:
    assert search(fts, "author:bob dinner") == [2]


def test_a_trailing_star_does_not_become_a_prefix_query(fts: sqlite3.Connection) -> None:
    assert search(fts, "pizz*") == []


def test_stemming_matches_other_forms_of_a_word(fts: sqlite3.Connection) -> None:
    assert search(fts, "dog runs") == [5]


def test_chinese_words_inside_a_sentence_are_found(fts: sqlite3.Connection) -> None:
    assert search(fts, "北京烤鸭") == [3]


def test_japanese_words_inside_a_sentence_are_found(fts: sqlite3.Connection) -> None:
    assert search(fts, "東京タワー") == [4]


def test_one_cjk_character_finds_it_anywhere_in_a_run(fts: sqlite3.Connection) -> None:
    assert sorted(search(fts, "鸭")) == [3]
    assert sorted(search(fts, "猫")) == [6]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_fts5_syntax_in_ranking_only_terms_never_raises(fts: sqlite3.Connection, query: str) -> None:
    expression = match_expression(["pizza"], ranking_only=keyword_terms(query) or ["pasta"])
    fts.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (expression,)).fetchall()


def test_ranking_only_terms_add_no_rows(fts: sqlite3.Connection) -> None:
    # "park" alone would match message 5; ranking only, it may only score rows "pizza" matches.
    expression = match_expression(["pizza"], ranking_only=["park"])
    rows = fts.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (expression,)).fetchall()
    assert rows == [(1,)]


# -- scripts other than English -----------------------------------------------------------------------------------

SCRIPT_ROWS = [
    (1, "Jun说Switch他要了，周六来拿"),  # Chinese with a Latin name and a brand written against it
    (2, "我的iPhone15掉进水渠里了"),
    (3, "어제 서울에서 친구를 만났어요"),  # Korean: particles glued to the words
    (4, "서울 가는 기차표 샀어"),
    (5, "ผมไปตลาดเมื่อวานนี้"),  # Thai, no spaces: "I went to the market yesterday"
    (6, "พรุ่งนี้ฝนตก"),  # "it rains tomorrow"
    (7, "नमस्ते दुनिया"),  # Devanagari: vowel signs are combining marks
    (8, "आज अच्छा दिन है"),
    (9, "ＡＢＣ１２３の注文"),  # full-width letters and digits
    (10, "Kenjiは5月に成都へ行く"),
]


@pytest.fixture
def scripts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(FTS_SCHEMA)
    conn.executemany("INSERT INTO messages_fts (rowid, body, author) VALUES (?, ?, 'x')",
                     [(rowid, fts_document(body)) for rowid, body in SCRIPT_ROWS])
    yield conn
    conn.close()


def test_latin_words_are_split_from_a_cjk_run_in_a_query() -> None:
    assert keyword_terms("Caroline什么时候去参加LGBTQ支持小组的？") == [
        "caroline", "去参", "参加", "lgbtq", "支持", "持小", "小组", "组的"]


def test_latin_words_are_split_from_a_cjk_run_in_a_message() -> None:
    assert fts_document("Jun说Switch他要了") == "Jun 说 Switch 他要 要了 了 "


def test_a_latin_name_inside_chinese_text_is_found(scripts: sqlite3.Connection) -> None:
    assert search(scripts, "Switch") == [1]
    assert search(scripts, "iPhone15") == [2]


def test_a_mixed_script_question_finds_its_message(scripts: sqlite3.Connection) -> None:
    # Only the Latin words can match: they must not be glued to the Chinese around them.
    assert search(scripts, "Jun买的Switch多少钱？") == [1]


def test_chinese_question_words_make_no_terms() -> None:
    assert keyword_terms("什么时候？") == []
    assert keyword_terms("Daniel在哪里上班？") == ["daniel", "在", "上班"]


def test_full_width_letters_and_digits_fold_to_ascii() -> None:
    assert fts_document("ＡＢＣ１２３") == "ABC123"
    assert keyword_terms("ＡＢＣ１２３") == ["abc123"]


def test_a_full_width_message_is_found_by_an_ascii_query(scripts: sqlite3.Connection) -> None:
    assert search(scripts, "abc123") == [9]


def test_half_width_katakana_fold_to_full_width() -> None:
    assert fts_document("ｶﾀｶﾅ") == " カタ タカ カナ ナ "


def test_a_korean_word_is_found_with_its_particle_attached(scripts: sqlite3.Connection) -> None:
    # "서울" (Seoul) is written "서울에서" (in Seoul) in message 3 and bare in message 4.
    assert sorted(search(scripts, "서울")) == [3, 4]


def test_a_korean_query_word_with_a_particle_finds_the_bare_word(scripts: sqlite3.Connection) -> None:
    assert search(scripts, "서울에")[0] == 3
    assert 4 in search(scripts, "서울에")


def test_a_lone_particle_after_a_name_is_not_a_term() -> None:
    assert keyword_terms("Sara의 논문") == ["sara", "논문"]
    assert keyword_terms("Kenjiは5月") == ["kenji", "5", "月"]


def test_a_thai_word_is_found_inside_a_run(scripts: sqlite3.Connection) -> None:
    assert search(scripts, "ตลาด") == [5]  # "market"
    assert search(scripts, "พรุ่งนี้") == [6]  # "tomorrow"


def test_thai_bigrams_keep_vowel_and_tone_marks_with_their_letter() -> None:
    assert fts_document("ที่นี่") == " ที่นี่ นี่ "


def test_a_devanagari_word_matches_only_itself(scripts: sqlite3.Connection) -> None:
    # Without the marks, "दिन" (day) and "दुनिया" (world) would share the tokens द and न.
    assert search(scripts, "दिन") == [8]
    assert search(scripts, "दुनिया") == [7]


def test_japanese_kana_and_kanji_are_found(scripts: sqlite3.Connection) -> None:
    assert search(scripts, "成都へ行く")[0] == 10


def test_english_text_is_stored_unchanged() -> None:
    text = "Caroline's LGBTQ support group, 7 May 2023"
    assert fts_document(text) == text


def test_embedding_input_folds_full_width_forms() -> None:
    assert embedding_input("ann", "Ｐｉｚｚａ", ("bob", "ｗｈｅｎ？")) == "bob: when?\nann: Pizza"
    assert embedding_query("ＡＢＣ１２３") == "ABC123"
