"""Vectors come after storage, with the real MiniLM, a real SQLite file and real FAISS: a stored message is keyword-
searchable before its vector exists, a failing model loses nothing, a message the model cannot embed is set aside
alone, a restart embeds what was left waiting, and a vector is never written for text that changed meanwhile."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.vectors.embedding import Embedder, EmbeddingService
from cogs.memory.ingest.queue import IngestQueue, RetryPolicy
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import consistent_ids, expected_vector, mean_form, stored_vector
from tests.cogs.memory.ingest.test_tombstones import GatedEmbedder
from tests.fixtures.core import RecordFactory, fetchall
from tests.fixtures.waiting import eventually

# Retries a few milliseconds apart, so a test waits for a recovering model, not for production pauses.
QUICK_RETRY = RetryPolicy(write_attempts=2, first_delay_s=0.01, max_delay_s=0.05)
# What must return while the model is blocked gets this long: far more than storing takes, never reached then.
BLOCKED_BOUND_S = 60.0


class FlakyEmbedder:
    """The real model, whose first ``failures`` calls raise (a model that falls over, then recovers)."""

    def __init__(self, inner: EmbeddingService, failures: int) -> None:
        self._inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.failures = failures
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError("model fell over")
        return await self._inner.embed(texts)


class PoisonedEmbedder:
    """The real model, failing every batch with a text that ends in ``POISON`` (one message it cannot take)."""

    def __init__(self, inner: EmbeddingService) -> None:
        self._inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.poisoned_calls = 0

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(text.endswith("POISON") for text in texts):
            self.poisoned_calls += 1
            raise ValueError("cannot embed this text")
        return await self._inner.embed(texts)


def started(store: SqliteStore, indexes: IndexRegistry, model: Embedder) -> IngestQueue:
    """A running ingest queue over ``model``, in small batches, retrying quickly."""
    queue = IngestQueue(store, model, indexes, batch_size=8, queue_size=64, retry=QUICK_RETRY)
    queue.start()
    return queue


async def ids_with_vectors(store: SqliteStore) -> list[int]:
    rows = await fetchall(store, "SELECT m.message_id FROM embeddings AS e JOIN messages AS m "
                                 "ON m.id = e.message_rowid ORDER BY m.message_id")
    return [row[0] for row in rows]


async def ids_matching(store: SqliteStore, word: str) -> list[int]:
    rows = await fetchall(store, "SELECT m.message_id FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid"
                                 " WHERE messages_fts MATCH ? ORDER BY m.message_id", (word,))
    return [row[0] for row in rows]


async def flush_until_embedded(queue: IngestQueue) -> None:
    """Flush until no stored message waits for its vector (a flush returns early while the model fails)."""
    async def embedded() -> bool:
        return not (await queue.flush(vectors=True)).vectors_pending

    await eventually(embedded, what="every stored message has its vector")


async def test_a_stored_message_is_keyword_searchable_before_its_vector_exists(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, core_profile: MemoryProfile,
    make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = started(store, indexes, gated)
    await queue.add(make_record(1, "the zeppelin lands at noon"))
    await queue.flush(vectors=False)
    engine = SqliteSearchEngine(store, embedder, indexes, core_profile)
    found = await engine.search("zeppelin", SearchFilters(guild_id=1), 5)
    assert ([result.message_id for result in found], await ids_with_vectors(store)) == ([1], [])
    gated.gate.set()
    await queue.close()


async def test_the_vector_follows_once_the_model_has_embedded_it(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = started(store, indexes, gated)
    await queue.add(make_record(1, "the zeppelin lands at noon"))
    await queue.flush(vectors=False)
    gated.gate.set()
    report = await queue.flush(vectors=True)
    await queue.close()
    assert report.vectors_pending == 0
    assert len(await consistent_ids(store, indexes)) == 1


async def test_a_flush_returns_once_stored_while_the_model_is_blocked(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = started(store, indexes, gated)
    for message_id in range(1, 201):
        await queue.add(make_record(message_id, f"zeppelin report {message_id}"))
    report = await asyncio.wait_for(queue.flush(), BLOCKED_BOUND_S)
    found = await ids_matching(store, "zeppelin")
    gated.gate.set()
    await queue.close()
    assert (report.stored, report.vectors_pending, found) == (200, 200, list(range(1, 201)))


async def test_close_leaves_the_vector_backlog_to_the_next_start(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = started(store, indexes, gated)
    for message_id in range(1, 51):
        await queue.add(make_record(message_id, f"zeppelin report {message_id}"))
    await queue.flush()
    await gated.in_flight.wait()  # a batch is with the model, which never answers before close
    await asyncio.wait_for(queue.close(), BLOCKED_BOUND_S)
    left = ((await store.pending_count())[0], await ids_with_vectors(store))
    gated.gate.set()
    restarted = started(store, indexes, embedder)
    report = await restarted.flush(vectors=True)
    await restarted.close()
    assert (left, report.vectors_pending, len(await consistent_ids(store, indexes))) == ((50, []), 0, 50)


async def test_a_model_that_fails_then_recovers_loses_nothing(
    mean_form: None, store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    flaky = FlakyEmbedder(embedder, failures=3)
    queue = started(store, indexes, flaky)
    for message_id in range(1, 6):
        await queue.add(make_record(message_id, f"message {message_id} about the picnic"))
    await flush_until_embedded(queue)
    await queue.close()
    assert len(await consistent_ids(store, indexes)) == 5
    np.testing.assert_allclose(await stored_vector(store, 5),
                               expected_vector(embedder, "alice", "message 5 about the picnic",
                                               ("alice", "message 4 about the picnic")), atol=1e-4)


async def test_while_the_model_fails_a_flush_says_how_many_wait_for_vectors(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    queue = started(store, indexes, FlakyEmbedder(embedder, failures=10**9))
    for message_id in range(1, 4):
        await queue.add(make_record(message_id, f"message {message_id}"))
    report = await queue.flush(vectors=True)
    await queue.close()
    assert (report.stored, report.vectors_pending) == (3, 3)


async def test_a_message_the_model_cannot_embed_is_set_aside_alone(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory,
    caplog: pytest.LogCaptureFixture
) -> None:
    queue = started(store, indexes, PoisonedEmbedder(embedder))
    for message_id in range(1, 6):
        await queue.add(make_record(message_id, "this one is POISON" if message_id == 3 else f"message {message_id}"))
    with caplog.at_level(logging.WARNING, logger="cogs.memory.ingest.filler"):
        report = await queue.flush(vectors=True)
    await queue.close()
    assert report.vectors_rejected == (3,)
    assert "Message 3 was not embedded (ValueError: cannot embed this text)" in caplog.text
    assert await ids_with_vectors(store) == [1, 2, 4, 5]
    assert sorted(indexes.get(1).ids().tolist()) == [1, 2, 4, 5]  # row ids follow message ids here


async def test_a_message_set_aside_stays_keyword_searchable(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    queue = started(store, indexes, PoisonedEmbedder(embedder))
    await queue.add(make_record(1, "this one is POISON"))
    await queue.flush(vectors=True)
    await queue.close()
    assert await ids_matching(store, "poison") == [1]


async def test_a_message_set_aside_is_not_tried_again(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    poisoned = PoisonedEmbedder(embedder)
    queue = started(store, indexes, poisoned)
    await queue.add(make_record(1, "this one is POISON"))
    await queue.flush(vectors=True)
    tries = poisoned.poisoned_calls
    await queue.add(make_record(2, "a later message in another channel", channel_id=11))
    await queue.flush(vectors=True)
    await queue.close()
    assert poisoned.poisoned_calls == tries


async def test_a_restart_embeds_the_messages_left_waiting(
    db_path: Path, index_dir: Path, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    store = await SqliteStore.open(db_path)
    indexes = IndexRegistry(store, index_dir, embedder.model_name, embedder.dimension)
    queue = started(store, indexes, FlakyEmbedder(embedder, failures=10**9))
    for message_id in range(1, 4):
        await queue.add(make_record(message_id, f"said before the restart {message_id}"))
    await queue.close()
    await indexes.close()
    await store.close()

    store = await SqliteStore.open(db_path)
    indexes = IndexRegistry(store, index_dir, embedder.model_name, embedder.dimension)
    await indexes.load_all()
    queue = started(store, indexes, embedder)
    await queue.flush(vectors=True)
    try:
        assert len(await consistent_ids(store, indexes)) == 3
    finally:
        await queue.close()
        await indexes.close()
        await store.close()


async def test_an_edit_while_the_vector_is_computed_keeps_the_edited_text(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = started(store, indexes, gated)
    await queue.add(make_record(1, "the draft"))
    await gated.in_flight.wait()  # the draft's vector is being computed
    edit = asyncio.create_task(queue.edit(1, "the final text", None))
    # The edit holds the writers' lock: the draft's vector comes after it.
    await eventually(queue.write_lock.locked, what="the edit holds the writers' lock")
    gated.gate.set()
    assert await edit
    await queue.flush(vectors=True)
    await queue.close()
    want = expected_vector(embedder, "alice", "the final text", None)
    np.testing.assert_allclose(await stored_vector(store, 1), want, atol=1e-4)
    assert len(await consistent_ids(store, indexes)) == 1


async def test_a_late_message_gives_its_successor_a_new_vector(
    mean_form: None, ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "first"))
    await ingest.add(make_record(3, "third"))
    await ingest.flush(vectors=True)
    await ingest.add(make_record(2, "second, imported late", author_name="bob"))
    await ingest.flush(vectors=True)
    np.testing.assert_allclose(await stored_vector(store, 3),
                               expected_vector(embedder, "alice", "third", ("bob", "second, imported late")), atol=1e-4)


async def test_an_edit_the_model_cannot_embed_drops_the_old_vector_and_waits(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    flaky = FlakyEmbedder(embedder, failures=0)
    queue = started(store, indexes, flaky)
    await queue.add(make_record(1, "my password is hunter2"))
    await queue.flush(vectors=True)
    flaky.failures = flaky.calls + 1  # the model fails the edit's embedding, then works again
    assert await queue.edit(1, "my password is [redacted]", None)
    left = await ids_with_vectors(store)
    await flush_until_embedded(queue)
    await queue.close()
    assert left == []
    np.testing.assert_allclose(await stored_vector(store, 1),
                               expected_vector(embedder, "alice", "my password is [redacted]", None), atol=1e-4)
