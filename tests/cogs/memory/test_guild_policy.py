"""GuildPolicy on a real SQLite file, the real MiniLM and real FAISS: settings, opt-outs and retention."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.guild_policy import GuildPolicy, GuildSettings
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import (consistent_ids, contents, expected_vector, stored_vector,
                                                  vector_bytes)
from tests.fixtures.core import T0, RecordFactory


@pytest.fixture
def policy(store: SqliteStore, ingest: IngestQueue) -> GuildPolicy:
    return GuildPolicy(store, ingest)


async def add(ingest: IngestQueue, make_record: RecordFactory, *minutes: float, guild_id: int = 1) -> None:
    for minute in minutes:
        message_id = int(minute * 10) + 1000 * guild_id
        await ingest.add(make_record(message_id, f"message at minute {minute}", guild_id=guild_id,
                                     channel_id=10 * guild_id, minute=minute))  # a channel belongs to one guild
    await ingest.flush(vectors=True)


async def test_a_guild_without_settings_has_the_defaults(policy: GuildPolicy) -> None:
    assert await policy.settings(1) == GuildSettings()


async def test_saved_settings_are_read_back_from_the_store(policy: GuildPolicy, store: SqliteStore,
                                                           ingest: IngestQueue) -> None:
    saved = GuildSettings(auto_recall=True, recall_channel_ids=frozenset({5}), retention_days=30)
    await policy.save_settings(1, saved)
    assert await GuildPolicy(store, ingest).settings(1) == saved


async def test_an_opt_out_is_read_back_from_the_store(policy: GuildPolicy, store: SqliteStore,
                                                      ingest: IngestQueue) -> None:
    await policy.set_opt_out(1, 100, True)
    assert await GuildPolicy(store, ingest).is_opted_out(1, 100)


async def test_opting_back_in_is_remembered(policy: GuildPolicy, store: SqliteStore, ingest: IngestQueue) -> None:
    await policy.set_opt_out(1, 100, True)
    await policy.set_opt_out(1, 100, False)
    assert (await policy.is_opted_out(1, 100), await GuildPolicy(store, ingest).is_opted_out(1, 100)) == (False, False)


async def test_an_opt_out_holds_in_its_guild_only(policy: GuildPolicy) -> None:
    await policy.set_opt_out(1, 100, True)
    assert await policy.is_opted_out(2, 100) is False


async def test_forgetting_older_messages_keeps_the_newer_ones(ingest: IngestQueue, store: SqliteStore,
                                                              make_record: RecordFactory) -> None:
    await add(ingest, make_record, 1, 2, 3, 4)
    forgotten = await ingest.delete_older_than(1, T0 + timedelta(minutes=2.5))
    assert (forgotten, await contents(store)) == (2, ["message at minute 3", "message at minute 4"])


async def test_forgetting_older_messages_keeps_fts_embeddings_and_faiss_in_step(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await add(ingest, make_record, 1, 2, 3, 4)
    await ingest.delete_older_than(1, T0 + timedelta(minutes=2.5))
    assert len(await consistent_ids(store, indexes)) == 2


async def test_forgetting_older_messages_leaves_other_guilds_alone(ingest: IngestQueue, store: SqliteStore,
                                                                   make_record: RecordFactory) -> None:
    await add(ingest, make_record, 1, guild_id=2)
    await ingest.delete_older_than(1, T0 + timedelta(minutes=5))
    assert await contents(store) == ["message at minute 1"]


async def test_the_oldest_message_left_keeps_its_vector(
    ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await add(ingest, make_record, 1, 2)
    before = await vector_bytes(store, 1020)
    await ingest.delete_older_than(1, T0 + timedelta(minutes=1.5))
    # The message alone: its vector never read its forgotten predecessor, so it is neither lost nor embedded again.
    assert await vector_bytes(store, 1020) == before
    np.testing.assert_allclose(await stored_vector(store, 1020),
                               expected_vector(embedder, "alice", "message at minute 2", None), atol=1e-5)


async def test_retention_forgets_by_each_guilds_own_days(policy: GuildPolicy, ingest: IngestQueue,
                                                         store: SqliteStore, make_record: RecordFactory) -> None:
    await add(ingest, make_record, 1)
    await add(ingest, make_record, 2, guild_id=2)
    await policy.save_settings(1, GuildSettings(retention_days=7))
    forgotten = await policy.apply_retention(T0 + timedelta(days=10))
    assert (forgotten, await contents(store)) == (1, ["message at minute 2"])
