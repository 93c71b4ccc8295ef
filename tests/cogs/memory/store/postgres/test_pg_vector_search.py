"""The vector side of PostgreSQL search when the HNSW index's nearest vectors mostly fail the filters: other
guilds' messages in the shared database, or an author filter over a busy guild."""

from __future__ import annotations

import numpy as np
import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.store.postgres.search import PostgresSearchEngine
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import insert, query, unit

QUERY = "pizza tonight"
GUILD, AUTHOR = 1, 100
# Far more than the index visits for a search, every one nearer the query than any target; the targets are a
# tenth of the rows, few enough to miss among what the index visits, enough for the planner to pick the index.
CROWD, TARGETS = 5400, 600


@pytest.mark.parametrize(("crowd_guild", "crowd_author", "filters"), [
    (2, AUTHOR, SearchFilters(guild_id=GUILD)),
    (GUILD, 200, SearchFilters(guild_id=GUILD, author_ids=frozenset({AUTHOR}))),
], ids=["other-guilds-nearer", "other-authors-nearer"])
async def test_the_nearest_passing_messages_are_found_however_many_nearer_ones_fail_the_filters(
        pg_store: PostgresStore, embedder: EmbeddingService, core_profile: MemoryProfile, make_record: RecordFactory,
        crowd_guild: int, crowd_author: int, filters: SearchFilters) -> None:
    near = (await embedder.embed_queries([QUERY]))[0]
    rng = np.random.default_rng(0)
    crowd = [make_record(10_000 + i, f"crowd {i}", guild_id=crowd_guild, author_id=crowd_author, channel_id=11)
             for i in range(CROWD)]
    await insert(pg_store, *crowd, model=embedder.model_name,
                 vectors=[near + 0.01 * rng.standard_normal(near.shape[0]).astype(np.float32) for _ in crowd])
    # Each target alone in its channel, so no target lends context to another and the ranking is the vectors'.
    targets = [make_record(i, f"target {i}", guild_id=GUILD, author_id=AUTHOR, channel_id=100 + i)
               for i in range(1, TARGETS + 1)]
    await insert(pg_store, *targets, model=embedder.model_name, vectors=[unit(i) for i in range(1, TARGETS + 1)])
    await query(pg_store, "ANALYZE")  # the statistics autovacuum keeps: the planner knows the targets' share
    nearest = sorted(range(1, TARGETS + 1), key=lambda i: -float(unit(i) @ near))[:10]
    results = await PostgresSearchEngine(pg_store, embedder, core_profile).search(QUERY, filters, 10, mode="vector")
    assert [hit.message_id for hit in results] == nearest
