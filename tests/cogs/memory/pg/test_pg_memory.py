"""Memory on PostgreSQL, chosen by a DATABASE_URL: the facade the cog uses works the same, and SQLite stays the
default."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from cogs.memory.config import database_url
from cogs.memory.memory import Memory
from cogs.memory.pg.store import PostgresStore
from cogs.memory.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from cogs.memory.store import MemoryStore
from tests.fixtures.core import RecordFactory


@pytest.fixture
async def pg_memory(core_profile: MemoryProfile, db_path: Path, index_dir: Path, database_url: str,
                    embedder: object) -> AsyncIterator[Memory]:
    memory = await Memory.open(core_profile, db_path, index_dir, database_url)
    yield memory
    await memory.close()


async def fill(memory: Memory, make_record: RecordFactory) -> None:
    await memory.add(make_record(1, "We should book the cabin by the lake for July", author_name="ann"))
    await memory.add(make_record(2, "Agreed, the lake cabin was great last year", author_name="ben"))
    await memory.add(make_record(3, "Has anyone fixed the printer on floor two?", author_name="cat", channel_id=11))
    await memory.add(make_record(4, "Secret plans for the lake cabin in guild two", guild_id=2))
    await memory.flush()


def test_no_database_url_means_sqlite() -> None:
    assert database_url({}) is None and database_url({"DATABASE_URL": "  "}) is None


def test_a_postgresql_database_url_is_used() -> None:
    assert database_url({"DATABASE_URL": "postgresql://bot@db/memory"}) == "postgresql://bot@db/memory"


def test_a_database_url_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^DATABASE_URL must be a postgresql:// URL \(or unset for SQLite\), "
                                         r"not mysql:\.\.\.$"):
        database_url({"DATABASE_URL": "mysql://bot:secret@db/memory"})


async def test_a_database_url_keeps_memory_in_postgresql_not_the_sqlite_file(pg_memory: Memory, db_path: Path,
                                                                            make_record: RecordFactory) -> None:
    await fill(pg_memory, make_record)
    assert isinstance(pg_memory.store, PostgresStore) and not db_path.exists()
    assert await pg_memory.store.count_messages(1) == 3


async def test_search_through_memory_finds_the_guilds_messages(pg_memory: Memory, make_record: RecordFactory) -> None:
    await fill(pg_memory, make_record)
    results = await pg_memory.search("lake cabin", SearchFilters(guild_id=1), limit=3)
    assert {hit["message_id"] for hit in results[:2]} == {1, 2} and all(hit["guild_id"] == 1 for hit in results)


async def test_stats_count_the_vectors_in_the_database(pg_memory: Memory, make_record: RecordFactory) -> None:
    await fill(pg_memory, make_record)
    stats = await pg_memory.stats(1)
    assert (stats["messages"], stats["vectors"], stats["index_kind"]) == (3, 3, "pgvector-hnsw")


async def test_forgetting_an_author_leaves_no_row_of_theirs(pg_memory: Memory, database_url: str,
                                                            make_record: RecordFactory) -> None:
    await fill(pg_memory, make_record)
    await pg_memory.delete_author(1, 100)
    assert await pg_memory.purge()
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetchval("SELECT COUNT(*) FROM messages WHERE author_id = 100 AND guild_id = 1")
        vectors = await conn.fetchval("SELECT COUNT(*) FROM embeddings")
    finally:
        await conn.close()
    assert (rows, vectors) == (0, 1)


async def test_without_a_database_url_memory_stays_on_sqlite(core_profile: MemoryProfile, db_path: Path,
                                                             index_dir: Path, embedder: object) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    try:
        assert isinstance(memory.store, MemoryStore) and db_path.exists()
    finally:
        await memory.close()
