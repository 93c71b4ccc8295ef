"""Migration 0006: keyword rows of a database from before it are rebuilt in today's form, for every script."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.language.keywords import keyword_terms, match_expression
from tests.fixtures.core import database_before, fetchall

FTS_MIGRATION = "0006_fts_all_scripts"
INSERT_OLD_MESSAGE = """
INSERT INTO messages (id, message_id, guild_id, channel_id, author_id, author_name, content, created_at)
VALUES (?, ?, 1, 10, 100, 'ann', ?, 0)
"""
# Before 0006, Hangul and Thai were stored as written: one token per spaced word, or per whole Thai run.
INSERT_OLD_KEYWORD_ROW = "INSERT INTO messages_fts (rowid, body, author) VALUES (?, ?, 'ann')"
OLD_MESSAGES = [
    (1, "어제 서울에서 친구를 만났어요"),  # "I met a friend in Seoul yesterday"
    (2, "ผมไปตลาดเมื่อวานนี้"),  # "I went to the market yesterday"
    (3, "Booked the cabin by the lake"),
]
MATCH = "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rowid"


@pytest.fixture
async def old_database(db_path: Path) -> Path:
    """A database from before 0006 holding three messages and their keyword rows in the old form."""
    async with database_before(db_path, FTS_MIGRATION) as conn:
        await conn.executemany(INSERT_OLD_MESSAGE, [(rowid, rowid, content) for rowid, content in OLD_MESSAGES])
        await conn.executemany(INSERT_OLD_KEYWORD_ROW, OLD_MESSAGES)
    return db_path


async def found(store: SqliteStore, query: str) -> list[int]:
    expression = match_expression(keyword_terms(query))
    return [row[0] for row in await fetchall(store, MATCH, (expression,))]


async def test_stored_korean_and_thai_messages_are_found_by_a_word_inside_them(old_database: Path) -> None:
    store = await SqliteStore.open(old_database)
    try:
        korean, thai = await found(store, "서울"), await found(store, "ตลาด")
    finally:
        await store.close()
    assert (korean, thai) == ([1], [2])


async def test_every_stored_message_keeps_one_keyword_row(old_database: Path) -> None:
    store = await SqliteStore.open(old_database)
    try:
        rows = await fetchall(store, "SELECT rowid FROM messages_fts ORDER BY rowid")
        english = await found(store, "lake cabin")
    finally:
        await store.close()
    assert ([row[0] for row in rows], english) == ([1, 2, 3], [3])
