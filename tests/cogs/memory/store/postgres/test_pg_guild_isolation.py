"""Guild isolation in PostgreSQL, read off the query log: every statement that reads messages names a guild_id,
except look-ups by a message's own globally unique id (a Discord snowflake or row id names one message only)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.store.postgres.indexes import DatabaseIndexes
from cogs.memory.store.postgres.search import PostgresSearchEngine
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from tests.fixtures.core import RecordFactory, running_ingest

TOUCHES_MESSAGES = re.compile(r"\b(FROM|JOIN|INTO|UPDATE)\s+messages\b", re.IGNORECASE)
# Keyed by one message's unique id (or the whole-table statements of listing guilds and VACUUM, and the lookup of
# which guilds hold a channel id, which reads guild ids alone): no other guild's row can match them.
BY_UNIQUE_ID = re.compile(r"WHERE (message_id = (\$1|ANY)|id = (\$1|ANY))|^INSERT INTO messages|^VACUUM"
                          r"|^SELECT DISTINCT guild_id FROM messages|^WITH RECURSIVE guilds\(id\)")


def statements(logged: list[Any]) -> list[str]:
    return [" ".join(record.query.split()) for record in logged]


@dataclass(frozen=True)
class Logged:
    """A PostgresStore that logs every statement it runs, and an IngestQueue writing to it."""

    store: PostgresStore
    ingest: IngestQueue
    queries: list[Any]


@pytest.fixture
async def logged(database_url: str, embedder: EmbeddingService) -> AsyncIterator[Logged]:
    queries: list[Any] = []
    store = await PostgresStore.open(database_url, query_logger=queries.append)
    indexes = DatabaseIndexes(store, embedder.model_name, embedder.dimension)
    async with running_ingest(store, embedder, indexes) as ingest:
        yield Logged(store, ingest, queries)
    await store.close()


async def test_every_search_statement_over_messages_names_the_guild(
        logged: Logged, embedder: EmbeddingService, core_profile: MemoryProfile, make_record: RecordFactory) -> None:
    await logged.ingest.add(make_record(1, "pizza tonight", guild_id=1))
    await logged.ingest.add(make_record(2, "pizza tomorrow", guild_id=2, channel_id=20))
    await logged.ingest.flush(vectors=True)
    engine = PostgresSearchEngine(logged.store, embedder, core_profile)
    logged.queries.clear()
    for mode in ("hybrid", "vector", "keyword"):
        await engine.search("pizza", SearchFilters(guild_id=1, allowed_channel_ids=frozenset({10}),
                                                  public_thread_parent_ids=frozenset({10})), 5, mode=mode)
    reads = [sql for sql in statements(logged.queries) if TOUCHES_MESSAGES.search(sql)]
    assert reads and all("guild_id = $" in sql for sql in reads), reads


async def test_every_ingest_statement_over_messages_names_the_guild_or_one_message(
        logged: Logged, make_record: RecordFactory) -> None:
    for message_id in range(1, 4):
        await logged.ingest.add(make_record(message_id, f"message {message_id}", guild_id=1))
    await logged.ingest.flush(vectors=True)
    await logged.ingest.edit(2, "edited", None)
    await logged.ingest.delete([1])
    await logged.ingest.delete_channel(1, 10)
    touching = [sql for sql in statements(logged.queries) if TOUCHES_MESSAGES.search(sql)]
    unscoped = [sql for sql in touching if "guild_id = $" not in sql and not BY_UNIQUE_ID.search(sql)]
    assert touching and unscoped == []
