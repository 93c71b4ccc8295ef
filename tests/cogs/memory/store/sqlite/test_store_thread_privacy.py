"""SqliteStore and thread privacy on a real SQLite file: the stored flag, the migration that adds it, the filter."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cogs.memory.records import SearchFilters
from cogs.memory.store.sqlite.filters import filter_clause
from cogs.memory.store.sqlite.store import SqliteStore, to_timestamp
from tests.fixtures.core import T0, RecordFactory, database_before, fetchall
from tests.fixtures.stores import insert

GENERAL, STAFF = 10, 11
PUBLIC_THREAD, PRIVATE_THREAD, STAFF_THREAD = 50, 51, 52
PRIVATE_MIGRATION = "0003_private_threads"


async def stored_flags(store: SqliteStore) -> dict[int, int]:
    rows = await fetchall(store, "SELECT message_id, private_thread FROM messages")
    return dict(rows)


@pytest.fixture
async def threads(store: SqliteStore, make_record: RecordFactory) -> SqliteStore:
    """#general (readable) with a public and a private thread, #staff (not readable) with a public one."""

    def in_thread(message_id: int, thread: int, parent: int, private: bool = False):
        record = make_record(message_id, f"message {message_id}", channel_id=thread, parent_channel_id=parent)
        return dataclasses.replace(record, private_thread=private)

    await insert(store, make_record(1, "in general", channel_id=GENERAL), in_thread(2, PUBLIC_THREAD, GENERAL),
                 in_thread(3, PRIVATE_THREAD, GENERAL, private=True), in_thread(4, STAFF_THREAD, STAFF),
                 make_record(5, "in staff", channel_id=STAFF),
                 dataclasses.replace(in_thread(6, PUBLIC_THREAD, GENERAL), guild_id=2))
    return store


async def matching(store: SqliteStore, **filters: object) -> list[int]:
    rowids = (await store.rowids_matching(SearchFilters(guild_id=1, **filters))).tolist()
    rows = await fetchall(store, "SELECT message_id FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                          (json.dumps(rowids),))
    return sorted(row[0] for row in rows)


async def test_insert_stores_the_private_thread_flag(threads: SqliteStore) -> None:
    assert await stored_flags(threads) == {1: 0, 2: 0, 3: 1, 4: 0, 5: 0, 6: 0}


async def test_a_public_thread_is_read_through_its_parent(threads: SqliteStore) -> None:
    assert await matching(threads, allowed_channel_ids=frozenset({GENERAL}),
                          public_thread_parent_ids=frozenset({GENERAL})) == [1, 2]


async def test_a_private_thread_passes_only_by_its_own_id(threads: SqliteStore) -> None:
    assert await matching(threads, allowed_channel_ids=frozenset({GENERAL, PRIVATE_THREAD}),
                          public_thread_parent_ids=frozenset({GENERAL})) == [1, 2, 3]


async def test_without_readable_parents_threads_pass_only_by_their_own_id(threads: SqliteStore) -> None:
    assert await matching(threads, allowed_channel_ids=frozenset({GENERAL, STAFF_THREAD})) == [1, 4]


async def test_readable_parents_do_not_widen_the_other_filters(threads: SqliteStore) -> None:
    assert await matching(threads, allowed_channel_ids=frozenset({GENERAL}), channel_ids=frozenset({PUBLIC_THREAD}),
                          public_thread_parent_ids=frozenset({GENERAL}), exclude_message_ids=frozenset({1})) == [2]


async def test_readable_parents_without_allowed_channels_change_nothing(threads: SqliteStore) -> None:
    assert await matching(threads, public_thread_parent_ids=frozenset({GENERAL})) == [1, 2, 3, 4, 5]


async def test_the_thread_rule_is_parameterised(threads: SqliteStore) -> None:
    filters = SearchFilters(guild_id=1, allowed_channel_ids=frozenset({GENERAL}),
                            public_thread_parent_ids=frozenset({GENERAL, STAFF}), after=T0)
    where, params = filter_clause(filters)
    assert str(STAFF) not in where
    assert params == [1, "[10]", 1, "[10, 11]", to_timestamp(T0)]


@pytest.mark.parametrize("after", [None, T0])
async def test_reading_public_threads_does_not_scan_the_guild(threads: SqliteStore, after) -> None:
    # Read through a guild_id index instead, the permission filter would visit every message of the guild.
    where, params = filter_clause(SearchFilters(guild_id=1, allowed_channel_ids=frozenset({GENERAL}),
                                                public_thread_parent_ids=frozenset({GENERAL}), after=after))
    plan = [row[3] for row in await fetchall(threads,
        f"EXPLAIN QUERY PLAN SELECT id FROM messages AS m WHERE {where}", params)]
    assert "MULTI-INDEX OR" in plan
    assert any("messages_public_thread_parent" in step for step in plan)
    assert not any("messages_guild_time" in step or "SCAN m" in step for step in plan)


# -- the migration ------------------------------------------------------------------------------------------------

INSERT_OLD_ROW = """
INSERT INTO messages (message_id, guild_id, channel_id, parent_channel_id, author_id, author_name, content, created_at)
VALUES (?, 1, ?, ?, 100, 'alice', 'old', 0)
"""


@pytest.fixture
async def old_database(db_path: Path) -> Path:
    """A database from before the flag: migrations up to 0003 applied, one channel and one thread message stored."""
    async with database_before(db_path, PRIVATE_MIGRATION) as conn:
        await conn.executemany(INSERT_OLD_ROW, [(1, GENERAL, None), (2, PUBLIC_THREAD, GENERAL)])
    return db_path


async def test_the_migration_marks_stored_thread_messages_private(old_database: Path) -> None:
    store = await SqliteStore.open(old_database)
    try:
        applied = await fetchall(store, "SELECT name FROM schema_migrations WHERE name = ?", (PRIVATE_MIGRATION,))
        flags = await stored_flags(store)
    finally:
        await store.close()
    assert applied and flags == {1: 0, 2: 1}
