"""MemoryStore on a real SQLite file: migrations, writes in one transaction, look-ups, settings, opt-outs."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.migrations import MIGRATIONS
from cogs.memory.records import SearchFilters
from cogs.memory.store import EditRow, MemoryStore, NewRow, WriteBatch, id_checksum, to_timestamp
from tests.fixtures.core import T0, RecordFactory, fetchall

MODEL = "test-model"


def unit(seed: int, dimension: int = 8) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return vector / np.linalg.norm(vector)


async def insert(store: MemoryStore, *records, model: str = MODEL) -> list[int]:
    rowids = list(store.allocate_rowids(len(records)))
    batch = WriteBatch(model, guild_ids={record.guild_id for record in records})
    batch.inserts = [NewRow(rowid, record, record.content, record.content, unit(rowid))
                     for rowid, record in zip(rowids, records, strict=True)]
    await store.write(batch)
    return rowids


async def test_migrations_are_recorded_in_order(store: MemoryStore) -> None:
    rows = await fetchall(store, "SELECT name FROM schema_migrations ORDER BY name")
    assert [row[0] for row in rows] == [migration.name for migration in MIGRATIONS]


async def test_reopening_applies_no_migration_twice(db_path: Path) -> None:
    first = await MemoryStore.open(db_path)
    await first.close()
    second = await MemoryStore.open(db_path)
    rows = await fetchall(second, "SELECT COUNT(*) FROM schema_migrations")
    await second.close()
    assert rows[0][0] == len(MIGRATIONS)


async def test_wal_and_foreign_keys_are_on(store: MemoryStore) -> None:
    assert (await fetchall(store, "PRAGMA journal_mode"))[0][0] == "wal"
    assert (await store._conn.execute_fetchall("PRAGMA foreign_keys"))[0][0] == 1  # the writer's own setting


async def test_write_stores_message_fts_row_and_vector(store: MemoryStore, make_record: RecordFactory) -> None:
    [rowid] = await insert(store, make_record(1, "the quick brown fox"))
    fts = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'fox'")
    ids, vectors = [page async for page in store.iter_embeddings(1, MODEL)][0]
    assert [row[0] for row in fts] == [rowid]
    assert ids.tolist() == [rowid]
    np.testing.assert_array_equal(vectors[0], unit(rowid))


async def test_failed_write_leaves_nothing_behind(store: MemoryStore, make_record: RecordFactory) -> None:
    await insert(store, make_record(1, "first"))
    with pytest.raises(sqlite3.IntegrityError):
        await insert(store, make_record(2, "second"), make_record(1, "duplicate snowflake"))
    rows = await fetchall(store, "SELECT message_id FROM messages")
    fts = await fetchall(store, "SELECT COUNT(*) FROM messages_fts")
    assert [row[0] for row in rows] == [1]
    assert fts[0][0] == 1


async def test_row_ids_are_not_reused_after_delete_and_reopen(db_path: Path, make_record: RecordFactory) -> None:
    store = await MemoryStore.open(db_path)
    [rowid] = await insert(store, make_record(1, "x"))
    await store.close()
    store = await MemoryStore.open(db_path)
    [next_rowid] = store.allocate_rowids(1)
    await store.close()
    assert next_rowid == rowid + 1


async def test_deleting_a_message_removes_fts_row_and_vector(store: MemoryStore, make_record: RecordFactory) -> None:
    [rowid] = await insert(store, make_record(1, "forget me"))
    await store.write(WriteBatch(MODEL, deletes=[rowid], guild_ids={1}))
    counts = [
        (await fetchall(store, f"SELECT COUNT(*) FROM {table}"))[0][0]
        for table in ("messages", "messages_fts", "embeddings")
    ]
    assert counts == [0, 0, 0]


async def test_edit_updates_content_and_fts(store: MemoryStore, make_record: RecordFactory) -> None:
    [rowid] = await insert(store, make_record(1, "old words"))
    batch = WriteBatch(MODEL, guild_ids={1})
    batch.edits = [EditRow(rowid, "new words", "new words", "alice", to_timestamp(T0))]
    await store.write(batch)
    old = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'old'")
    new = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'new'")
    assert (old, [row[0] for row in new]) == ([], [rowid])
    assert (await store.message(1)).content == "new words"


async def test_replacing_vectors_drops_other_models_vectors(store: MemoryStore, make_record: RecordFactory) -> None:
    [rowid] = await insert(store, make_record(1, "x"), model="old-model")
    batch = WriteBatch(MODEL, guild_ids={1}, replace_all_models=True)
    batch.vectors = [(rowid, unit(5))]
    await store.write(batch)
    rows = await fetchall(store, "SELECT model FROM embeddings")
    assert [row[0] for row in rows] == [MODEL]


async def test_fingerprint_matches_checksum_of_ids_and_counts_generations(
    store: MemoryStore, make_record: RecordFactory
) -> None:
    rowids = await insert(store, make_record(1, "a"), make_record(2, "b"))
    await insert(store, make_record(3, "c", guild_id=2))
    count, checksum, generation = await store.index_fingerprint(1, MODEL)
    assert (count, checksum, generation) == (2, id_checksum(np.array(rowids)), 1)


async def test_previous_and_next_follow_channel_order(store: MemoryStore, make_record: RecordFactory) -> None:
    await insert(store, make_record(1, "one"), make_record(3, "three"), make_record(2, "other channel", channel_id=11),
                 make_record(4, "four"))
    middle = await store.message(3)
    previous = await store.previous_in_channel(1, 10, middle.created_at, middle.message_id)
    following = await store.next_in_channel(1, 10, middle.created_at, middle.message_id)
    assert (previous.content, following.content) == ("one", "four")


async def test_same_timestamp_messages_are_ordered_by_snowflake(store: MemoryStore, make_record: RecordFactory) -> None:
    await insert(store, make_record(7, "later id", minute=1), make_record(6, "earlier id", minute=1))
    first = await store.message(6)
    following = await store.next_in_channel(1, 10, first.created_at, first.message_id)
    assert following.message_id == 7


async def test_channel_refs_include_its_threads(store: MemoryStore, make_record: RecordFactory) -> None:
    await insert(store, make_record(1, "in channel"), make_record(2, "in thread", channel_id=99, parent_channel_id=10),
                 make_record(3, "elsewhere", channel_id=11))
    refs = await store.refs_for_channel(1, 10)
    assert sorted(ref.message_id for ref in refs) == [1, 2]


async def test_author_refs_without_guild_span_guilds(store: MemoryStore, make_record: RecordFactory) -> None:
    await insert(store, make_record(1, "a", guild_id=1), make_record(2, "b", guild_id=2),
                 make_record(3, "c", author_id=200))
    assert sorted(ref.message_id for ref in await store.refs_for_author(None, 100)) == [1, 2]
    assert [ref.message_id for ref in await store.refs_for_author(2, 100)] == [2]


async def test_rowids_matching_applies_every_filter(store: MemoryStore, make_record: RecordFactory) -> None:
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


async def test_guild_settings_are_kept_per_guild_as_json(store: MemoryStore) -> None:
    await store.set_guild_setting(1, "enabled", True)
    await store.set_guild_setting(1, "channels", [3, 4])
    await store.set_guild_setting(2, "limit", 5)
    assert await store.guild_settings(1) == {"enabled": True, "channels": [3, 4]}


async def test_setting_none_removes_the_key(store: MemoryStore) -> None:
    await store.set_guild_setting(1, "limit", 5)
    await store.set_guild_setting(1, "limit", None)
    assert await store.guild_settings(1) == {}


async def test_opt_outs_round_trip(store: MemoryStore) -> None:
    await store.set_opt_out(1, 100, True)
    await store.set_opt_out(1, 100, True)
    await store.set_opt_out(2, 200, True)
    await store.set_opt_out(2, 200, False)
    assert await store.opt_outs() == {(1, 100)}


async def test_naive_datetimes_are_refused(store: MemoryStore, make_record: RecordFactory) -> None:
    naive = dataclasses.replace(make_record(1, "x"), created_at=T0.replace(tzinfo=None))
    with pytest.raises(ValueError, match="timezone-aware"):
        await insert(store, naive)


async def test_reads_see_each_committed_write(store: MemoryStore, make_record: RecordFactory) -> None:
    def count(connection: sqlite3.Connection) -> int:
        return connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0]

    assert await store.read(count) == 0
    await insert(store, make_record(1, "hello"))
    assert await store.read(count) == 1


async def test_reads_do_not_wait_for_an_open_write(store: MemoryStore, db_path: Path) -> None:
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


async def test_reads_cannot_write(store: MemoryStore) -> None:
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await store.read(lambda connection: connection.execute("DELETE FROM messages"))
