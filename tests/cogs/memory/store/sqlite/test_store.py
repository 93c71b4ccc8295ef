"""The store on both sides, real SQLite file and real PostgreSQL 16 + pgvector: migrations, writes in one
transaction, look-ups, settings, opt-outs. Tests that ask for ``store`` are about the SQLite file alone."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.store.sqlite import migrations
from cogs.memory.store.postgres import schema as pg_schema
from cogs.memory.records import SearchFilters
from cogs.memory.store.sqlite.store import EditRow, SqliteStore, WriteBatch, to_timestamp
from cogs.memory.vectors.index import id_checksum
from cogs.memory.store.protocol import Store
from tests.fixtures.core import T0, RecordFactory, fetchall
from tests.fixtures.stores import MODEL, count_rows, insert, is_sqlite, keyword_rowids, query, stored_vector, unit


async def test_migrations_are_recorded_in_order(memory_store: Store) -> None:
    expected = (migrations if is_sqlite(memory_store) else pg_schema).MIGRATIONS
    rows = await query(memory_store, "SELECT name FROM schema_migrations ORDER BY name")
    assert [row[0] for row in rows] == [migration.name for migration in expected]


async def test_reopening_applies_no_migration_twice(db_path: Path) -> None:
    first = await SqliteStore.open(db_path)
    await first.close()
    second = await SqliteStore.open(db_path)
    rows = await fetchall(second, "SELECT COUNT(*) FROM schema_migrations")
    await second.close()
    assert rows[0][0] == len(migrations.MIGRATIONS)


async def test_wal_and_foreign_keys_are_on(store: SqliteStore) -> None:
    assert (await fetchall(store, "PRAGMA journal_mode"))[0][0] == "wal"
    assert (await store._conn.execute_fetchall("PRAGMA foreign_keys"))[0][0] == 1  # the writer's own setting


async def test_a_written_message_reads_back_with_its_words_and_vector(memory_store: Store,
                                                                      make_record: RecordFactory) -> None:
    [rowid] = await insert(memory_store, make_record(1, "the quick brown fox"))
    message = await memory_store.message(1)
    assert (message.rowid, message.content, message.author_name) == (rowid, "the quick brown fox", "alice")
    assert await keyword_rowids(memory_store, "fox") == [rowid]
    np.testing.assert_allclose(await stored_vector(memory_store, rowid), unit(1), rtol=1e-6)


async def test_iter_embeddings_pages_a_guilds_vectors(store: SqliteStore, make_record: RecordFactory) -> None:
    [rowid] = await insert(store, make_record(1, "the quick brown fox"))
    ids, vectors = [page async for page in store.iter_embeddings(1, MODEL)][0]
    assert ids.tolist() == [rowid]
    np.testing.assert_array_equal(vectors[0], unit(1))


async def test_failed_write_leaves_nothing_behind(store: SqliteStore, make_record: RecordFactory) -> None:
    await insert(store, make_record(1, "first"))
    with pytest.raises(sqlite3.IntegrityError):
        await insert(store, make_record(2, "second"), make_record(1, "duplicate snowflake"))
    rows = await fetchall(store, "SELECT message_id FROM messages")
    fts = await fetchall(store, "SELECT COUNT(*) FROM messages_fts")
    assert [row[0] for row in rows] == [1]
    assert fts[0][0] == 1


async def test_row_ids_are_not_reused_after_delete_and_reopen(db_path: Path, make_record: RecordFactory) -> None:
    store = await SqliteStore.open(db_path)
    [rowid] = await insert(store, make_record(1, "x"))
    await store.close()
    store = await SqliteStore.open(db_path)
    [next_rowid] = store.allocate_rowids(1)
    await store.close()
    assert next_rowid == rowid + 1


async def test_deleting_a_message_removes_its_words_and_vector(memory_store: Store,
                                                                make_record: RecordFactory) -> None:
    [rowid] = await insert(memory_store, make_record(1, "forget me"))
    await memory_store.write(WriteBatch(MODEL, deletes=[rowid], guild_ids={1}))
    tables = ("messages", "messages_fts", "embeddings") if is_sqlite(memory_store) else ("messages", "embeddings")
    assert await count_rows(memory_store, tables) == [0] * len(tables)
    assert await keyword_rowids(memory_store, "forget") == []


async def test_edit_updates_content_and_keyword_words(memory_store: Store, make_record: RecordFactory) -> None:
    [rowid] = await insert(memory_store, make_record(1, "old words"))
    batch = WriteBatch(MODEL, guild_ids={1})
    batch.edits = [EditRow(rowid, "new words", "new words", "alice", to_timestamp(T0))]
    await memory_store.write(batch)
    old = await keyword_rowids(memory_store, "old")
    new = await keyword_rowids(memory_store, "new")
    assert (old, new) == ([], [rowid])
    assert (await memory_store.message(1)).content == "new words"


async def test_replacing_vectors_drops_other_models_vectors(memory_store: Store,
                                                            make_record: RecordFactory) -> None:
    [rowid] = await insert(memory_store, make_record(1, "x"), model="old-model")
    batch = WriteBatch(MODEL, guild_ids={1}, replace_all_models=True)
    batch.vectors = [(rowid, unit(5))]
    await memory_store.write(batch)
    rows = await query(memory_store, "SELECT model FROM embeddings")
    assert [row[0] for row in rows] == [MODEL]


async def test_fingerprint_matches_checksum_of_ids_and_counts_generations(
    store: SqliteStore, make_record: RecordFactory
) -> None:
    rowids = await insert(store, make_record(1, "a"), make_record(2, "b"))
    await insert(store, make_record(3, "c", guild_id=2))
    count, checksum, generation = await store.index_fingerprint(1, MODEL)
    assert (count, checksum, generation) == (2, id_checksum(np.array(rowids)), 1)


async def test_previous_and_paging_follow_channel_order(memory_store: Store, make_record: RecordFactory) -> None:
    await insert(memory_store, make_record(1, "one"), make_record(3, "three"),
                 make_record(2, "other channel", channel_id=11), make_record(4, "four"))
    middle = await memory_store.message(3)
    previous = await memory_store.previous_in_channel(1, 10, middle.created_at, middle.message_id)
    walked = [message.content async for message in memory_store.iter_channel(1, 10, page=2)]
    assert (previous.content, walked) == ("one", ["one", "three", "four"])


async def test_same_timestamp_messages_are_ordered_by_snowflake(memory_store: Store,
                                                                make_record: RecordFactory) -> None:
    await insert(memory_store, make_record(7, "later id", minute=1), make_record(6, "earlier id", minute=1))
    later = await memory_store.message(7)
    previous = await memory_store.previous_in_channel(1, 10, later.created_at, later.message_id)
    walked = [message.message_id async for message in memory_store.iter_channel(1, 10)]
    assert (previous.message_id, walked) == (6, [6, 7])


async def test_channel_refs_include_its_threads(memory_store: Store, make_record: RecordFactory) -> None:
    await insert(memory_store, make_record(1, "in channel"),
                 make_record(2, "in thread", channel_id=99, parent_channel_id=10),
                 make_record(3, "elsewhere", channel_id=11))
    refs = await memory_store.refs_for_channel(1, 10)
    assert sorted(ref.message_id for ref in refs) == [1, 2]


async def test_author_refs_without_guild_span_guilds(memory_store: Store, make_record: RecordFactory) -> None:
    await insert(memory_store, make_record(1, "a", guild_id=1), make_record(2, "b", guild_id=2),
                 make_record(3, "c", author_id=200))
    assert sorted(ref.message_id for ref in await memory_store.refs_for_author(None, 100)) == [1, 2]
    assert [ref.message_id for ref in await memory_store.refs_for_author(2, 100)] == [2]


async def test_a_guild_sees_only_its_own_messages(memory_store: Store, make_record: RecordFactory) -> None:
    await insert(memory_store, make_record(1, "ours", guild_id=1), make_record(2, "theirs", guild_id=2))
    assert await memory_store.count_messages(1) == 1
    assert [ref.message_id for ref in await memory_store.refs_for_guild(2)] == [2]
    assert sorted(await memory_store.guild_ids()) == [1, 2]


async def test_rowids_matching_applies_every_filter(store: SqliteStore, make_record: RecordFactory) -> None:
    rowids = await insert(
        store,
        make_record(1, "kept", minute=10),
        make_record(2, "other guild", guild_id=2, minute=10),
        make_record(3, "other channel", channel_id=11, minute=10),
        make_record(4, "other author", author_id=200, minute=10),
        make_record(5, "too early", minute=1),
        make_record(6, "excluded", minute=10),
        make_record(7, "not allowed", channel_id=12, minute=10),
    )
    filters = SearchFilters(guild_id=1, channel_ids=frozenset({10, 12}), author_ids=frozenset({100}),
                            after=T0 + timedelta(minutes=5), before=T0 + timedelta(minutes=20),
                            allowed_channel_ids=frozenset({10, 11}), exclude_message_ids=frozenset({6}))
    assert (await store.rowids_matching(filters)).tolist() == [rowids[0]]


async def test_guild_settings_are_kept_per_guild_as_json(memory_store: Store) -> None:
    await memory_store.set_guild_setting(1, "enabled", True)
    await memory_store.set_guild_setting(1, "channels", [3, 4])
    await memory_store.set_guild_setting(2, "limit", 5)
    assert await memory_store.guild_settings(1) == {"enabled": True, "channels": [3, 4]}


async def test_setting_none_removes_the_key(memory_store: Store) -> None:
    await memory_store.set_guild_setting(1, "limit", 5)
    await memory_store.set_guild_setting(1, "limit", None)
    assert await memory_store.guild_settings(1) == {}


async def test_settings_merge_key_by_key_and_vanish_when_empty(memory_store: Store) -> None:
    # Set at once: two commands changing different keys of one guild together both keep theirs.
    await asyncio.gather(memory_store.set_guild_setting(1, "retention_days", 30),
                         memory_store.set_guild_setting(1, "enabled", False))
    merged = await memory_store.guild_settings(1)
    await memory_store.set_guild_setting(1, "retention_days", None)
    await memory_store.set_guild_setting(1, "enabled", None)
    assert merged == {"retention_days": 30, "enabled": False}
    assert await count_rows(memory_store, ["guild_settings"]) == [0]


async def test_opt_outs_round_trip(memory_store: Store) -> None:
    await memory_store.set_opt_out(1, 100, True)
    await memory_store.set_opt_out(1, 100, True)
    await memory_store.set_opt_out(2, 200, True)
    await memory_store.set_opt_out(2, 200, False)
    assert await memory_store.opt_outs() == {(1, 100)}


async def test_naive_datetimes_are_refused(memory_store: Store, make_record: RecordFactory) -> None:
    naive = dataclasses.replace(make_record(1, "x"), created_at=T0.replace(tzinfo=None))
    with pytest.raises(ValueError, match="timezone-aware"):
        await insert(memory_store, naive)


async def test_reads_see_each_committed_write(store: SqliteStore, make_record: RecordFactory) -> None:
    def count(connection: sqlite3.Connection) -> int:
        return connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0]

    assert await store.read(count) == 0
    await insert(store, make_record(1, "hello"))
    assert await store.read(count) == 1


async def test_reads_do_not_wait_for_an_open_write(store: SqliteStore, db_path: Path) -> None:
    # Another connection holds the write lock mid-transaction; a search must still answer, from the last commit.
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO guild_settings (guild_id, settings) VALUES (1, '{}')")
    try:
        rows = await store.read(lambda connection: connection.execute("SELECT * FROM guild_settings").fetchall())
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert rows == []


async def test_reads_cannot_write(store: SqliteStore) -> None:
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await store.read(lambda connection: connection.execute("DELETE FROM messages"))
