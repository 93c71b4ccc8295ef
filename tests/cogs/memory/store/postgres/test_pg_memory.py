"""Memory on PostgreSQL, chosen by a DATABASE_URL, and SQLite stays the default. That the facade works the same on
both stores is tested once for both, in tests/cogs/memory/test_memory.py and test_purge.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogs.memory.memory import Memory
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import fill


@pytest.fixture
async def pg_memory(core_profile: MemoryProfile, db_path: Path, index_dir: Path, database_url: str,
                    embedder: object) -> AsyncIterator[Memory]:
    memory = await Memory.open(core_profile, db_path, index_dir, database_url)
    yield memory
    await memory.close()


async def test_a_database_url_keeps_memory_in_postgresql_not_the_sqlite_file(pg_memory: Memory, db_path: Path,
                                                                            make_record: RecordFactory) -> None:
    await fill(pg_memory, make_record)
    assert isinstance(pg_memory.store, PostgresStore) and not db_path.exists()
    assert await pg_memory.store.count_messages(1) == 3


async def test_without_a_database_url_memory_stays_on_sqlite(core_profile: MemoryProfile, db_path: Path,
                                                             index_dir: Path, embedder: object) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    try:
        assert isinstance(memory.store, SqliteStore) and db_path.exists()
    finally:
        await memory.close()
