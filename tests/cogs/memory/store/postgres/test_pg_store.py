"""What only the PostgreSQL store does, on a real PostgreSQL 16 + pgvector (pgserver): its stemmed documents, races
between processes sharing one database, VACUUM after a forget, migrations under an advisory lock. What both stores
do is tested once for both, in tests/cogs/memory/store/sqlite/test_store.py."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from cogs.memory.store.postgres import fts
from cogs.memory.store.postgres.schema import MIGRATIONS
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.store.rows import EditRow, WriteBatch
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import MODEL, insert


async def scalar(url: str, sql: str, *params: object) -> object:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(sql, *params)
    finally:
        await conn.close()


async def test_the_document_holds_stemmed_body_and_author_words(pg_store: PostgresStore,
                                                               make_record: RecordFactory) -> None:
    await insert(pg_store, make_record(1, "Running to the café 東京都", author_name="Zoë"))
    document = await scalar(pg_store.url, "SELECT document::text FROM messages WHERE message_id = 1")
    assert document == "'cafe':4A 'run':1A 'the':3A 'to':2A 'zoe':8B '京都':6A '東京':5A '都':7A"


async def test_two_processes_ingesting_one_stream_store_each_message_once(database_url: str,
                                                                          make_record: RecordFactory) -> None:
    first, second = await asyncio.gather(PostgresStore.open(database_url), PostgresStore.open(database_url))
    try:
        stream = [make_record(message_id, f"message {message_id}") for message_id in range(1, 41)]
        await asyncio.gather(*(insert(store, record) for record in stream for store in (first, second)))
        count = await scalar(database_url, "SELECT COUNT(*) FROM messages")
        vectors = await scalar(database_url, "SELECT COUNT(*) FROM embeddings")
    finally:
        await asyncio.gather(first.close(), second.close())
    assert (count, vectors) == (40, 40)


async def test_processes_never_share_row_ids(database_url: str) -> None:
    first, second = await asyncio.gather(PostgresStore.open(database_url), PostgresStore.open(database_url))
    try:
        ids = set(first.allocate_rowids(100))
        assert ids.isdisjoint(second.allocate_rowids(100))
    finally:
        await asyncio.gather(first.close(), second.close())


async def test_an_edit_from_one_process_is_read_by_the_other(database_url: str, make_record: RecordFactory) -> None:
    first, second = await asyncio.gather(PostgresStore.open(database_url), PostgresStore.open(database_url))
    try:
        [rowid] = await insert(first, make_record(1, "before"))
        [ref] = await second.refs_for_message_ids([1])
        await second.write(WriteBatch(MODEL, edits=[EditRow(ref.rowid, "after", "after", "alice", None)]))
        message = await first.message(1)
    finally:
        await asyncio.gather(first.close(), second.close())
    assert (ref.rowid, message.content) == (rowid, "after")


async def test_a_delete_from_one_process_keeps_the_other_from_storing_it_again(
        database_url: str, make_record: RecordFactory) -> None:
    first, second = await asyncio.gather(PostgresStore.open(database_url), PostgresStore.open(database_url))
    try:
        [rowid] = await insert(first, make_record(1, "gone soon"))
        await second.write(WriteBatch(MODEL, deletes=[rowid], tombstones=[1], deleted_at=1.0))
        await insert(first, make_record(1, "gone soon"))  # a late gateway event in the first process
        stored, deleted = await first.known_message_ids([1])
    finally:
        await asyncio.gather(first.close(), second.close())
    assert (stored, deleted) == (set(), {1})


async def test_forget_leaves_no_row_and_vacuum_runs(pg_store: PostgresStore, make_record: RecordFactory) -> None:
    [rowid] = await insert(pg_store, make_record(1, "a secret"))
    await pg_store.write(WriteBatch(MODEL, deletes=[rowid]))
    pending = await pg_store.purge_pending()
    await pg_store.erase_forgotten()
    rows = await scalar(pg_store.url, "SELECT COUNT(*) FROM messages WHERE content LIKE '%secret%'")
    vectors = await scalar(pg_store.url, "SELECT COUNT(*) FROM embeddings")
    vacuumed = await scalar(pg_store.url, "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = 'messages'")
    assert (pending, rows, vectors, await pg_store.purge_pending()) == (True, 0, 0, False)
    assert vacuumed >= 1


async def test_processes_opening_together_apply_each_migration_once(database_url: str) -> None:
    stores = await asyncio.gather(*(PostgresStore.open(database_url) for _ in range(4)))
    await asyncio.gather(*(store.close() for store in stores))
    names = await scalar(database_url, "SELECT array_agg(name ORDER BY name) FROM schema_migrations")
    assert names == [migration.name for migration in MIGRATIONS]


def test_query_words_are_the_stems_the_document_holds() -> None:
    assert fts.query_words("Who was running to Tokyo's cafés?") == ["run", "tokyo", "cafe"]
    assert fts.tsquery(["run", "京"]) == "'run' | '京':*"


def test_a_word_under_three_bytes_is_indexed_unstemmed_as_fts5s_porter_leaves_it() -> None:
    # BM25 divides by a message's word count: a dropped "s" would make PostgreSQL's rows shorter than SQLite's.
    assert fts.words("What's up with us, pets?") == "what s up with us pet"


@pytest.mark.parametrize("query", ["東京", "京"])
async def test_cjk_queries_match_like_the_sqlite_side(pg_store: PostgresStore, make_record: RecordFactory,
                                                      query: str) -> None:
    await insert(pg_store, make_record(1, "東京都に行った"), make_record(2, "大阪"))
    matched = await scalar(pg_store.url, "SELECT array_agg(message_id) FROM messages "
                           "WHERE document @@ to_tsquery('simple', $1)", fts.tsquery(fts.query_words(query)))
    assert matched == [1]
