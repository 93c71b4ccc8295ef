"""The SQLite engine's own machinery: FTS5's row count read from its own record, and the query plans that keep a
search from reading a whole guild."""

from __future__ import annotations

import sqlite3

import pytest

from cogs.memory.records import SearchFilters
from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.store.sqlite.filters import filter_clause
from cogs.memory.store.sqlite.migrations import FTS_TOKENIZER
from cogs.memory.store.sqlite.search import SELECT_CANDIDATES, SELECT_PASSING, rows_indexed, select_neighbours
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import T0, fetchall

REPLY_WINDOW = RankingTuning().reply_window


def test_the_row_count_bm25_reads_is_read_from_fts5s_own_record() -> None:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute(f'CREATE VIRTUAL TABLE messages_fts USING fts5(body, author, tokenize = "{FTS_TOKENIZER}")')
    assert rows_indexed(connection) == 0
    written = 0
    for more in (1, 126, 1, 16_256):  # 1, 127 and 128 rows hold one and two bytes; 16,384 needs three
        connection.executemany("INSERT INTO messages_fts (rowid, body, author) VALUES (?, 'hello world', 'ann')",
                               [(written + i + 1,) for i in range(more)])
        written += more
        assert rows_indexed(connection) == written
    connection.execute("DELETE FROM messages_fts WHERE rowid <= 200")
    assert rows_indexed(connection) == written - 200


@pytest.mark.parametrize("sql", [SELECT_CANDIDATES, SELECT_PASSING])
async def test_rows_are_looked_up_by_row_id_not_by_reading_the_guild(store: SqliteStore, sql: str) -> None:
    # A guild_id index scan here reads every message of the guild for each search.
    where, params = filter_clause(SearchFilters(guild_id=1, after=T0))
    plan = [row[3] for row in await fetchall(store, f"EXPLAIN QUERY PLAN {sql.format(where=where)}",
                                             ["[1, 2]", *params])]
    assert any("INTEGER PRIMARY KEY" in step for step in plan)
    assert not any("messages_guild" in step for step in plan)


async def test_the_replies_of_a_message_are_looked_up_in_the_reply_index(store: SqliteStore) -> None:
    # Any other index reads a whole channel or guild for each source of each search.
    plan = [row[3] for row in await fetchall(store, f"EXPLAIN QUERY PLAN {select_neighbours(REPLY_WINDOW)}",
                                             ["[1, 2]"])]
    replies = [step for step in plan if step.startswith("SEARCH r ")]
    assert len(replies) == REPLY_WINDOW and all("messages_reply_to" in step for step in replies), plan
