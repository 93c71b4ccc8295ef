"""Durable capture on PostgreSQL (real PostgreSQL 16 + pgvector, real MiniLM): a message is stored and keyword-
searchable while the model fails, waits in pending_vectors, and gets its vector from the next process that runs."""

from __future__ import annotations

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue, RetryPolicy
from cogs.memory.store.postgres.indexes import DatabaseIndexes
from cogs.memory.store.postgres.search import PostgresSearchEngine
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from tests.cogs.memory.ingest.test_filler import FlakyEmbedder
from tests.fixtures.core import RecordFactory

QUICK_RETRY = RetryPolicy(write_attempts=2, first_delay_s=0.01, max_delay_s=0.05)


async def test_a_message_stored_while_the_model_fails_is_found_by_keyword_and_embedded_after_a_restart(
    database_url: str, embedder: EmbeddingService, core_profile: MemoryProfile, make_record: RecordFactory
) -> None:
    store = await PostgresStore.open(database_url)
    indexes = DatabaseIndexes(store, embedder.model_name, embedder.dimension)
    queue = IngestQueue(store, FlakyEmbedder(embedder, failures=10**9), indexes, retry=QUICK_RETRY)
    queue.start()
    await queue.add(make_record(1, "the zeppelin lands at noon"))
    report = await queue.flush(vectors=True)
    engine = PostgresSearchEngine(store, embedder, core_profile)
    found = await engine.search("zeppelin", SearchFilters(guild_id=1), 5, mode="keyword")
    await queue.close()
    await store.close()

    store = await PostgresStore.open(database_url)
    queue = IngestQueue(store, embedder, indexes)
    queue.start()
    try:
        await queue.flush(vectors=True)
        vectors = await store.count_vectors(1, embedder.model_name)
    finally:
        await queue.close()
        await store.close()
    assert (report.vectors_pending, [result.message_id for result in found], vectors) == (1, [1], 1)
