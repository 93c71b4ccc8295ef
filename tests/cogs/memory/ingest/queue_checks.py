"""What the ingest tests check a store and its indexes with: the ids FTS, embeddings and FAISS hold, stored vectors
and contents, the ``mean`` vector form, and an embedder that records what it is asked."""

from __future__ import annotations

from collections.abc import AsyncIterator

import numpy as np
import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.language.keywords import embedding_input
from cogs.memory.vectors.stored import VectorSource
from cogs.memory.vectors.registry import IndexRegistry
from tests.fixtures.core import fetchall


async def consistent_ids(store: SqliteStore, indexes: IndexRegistry, guild_id: int = 1) -> list[int]:
    """The guild's message row ids, after checking FTS, embeddings and FAISS hold exactly the same ids."""
    messages = await fetchall(store, "SELECT id FROM messages WHERE guild_id = ? ORDER BY id", (guild_id,))
    fts = await fetchall(
        store,
        "SELECT rowid FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE guild_id = ?) ORDER BY rowid",
        (guild_id,))
    vectors = await fetchall(
        store, "SELECT message_rowid FROM embeddings JOIN messages ON id = message_rowid WHERE guild_id = ? "
        "ORDER BY message_rowid", (guild_id,))
    index = indexes.get(guild_id)
    in_index = sorted(index.ids().tolist()) if index is not None else []
    ids = [row[0] for row in messages]
    assert [row[0] for row in fts] == ids
    assert [row[0] for row in vectors] == ids
    assert in_index == ids
    return ids


async def stored_vector(store: SqliteStore, message_id: int) -> np.ndarray:
    rows = await fetchall(
        store, "SELECT vector FROM embeddings JOIN messages ON id = message_rowid WHERE message_id = ?", (message_id,))
    return np.frombuffer(rows[0][0], dtype="<f4")


@pytest.fixture
def mean_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """Store each vector as the mean of the message alone and after its predecessor (the benchmark's ``mean`` form,
    the core's before issue 25): what shows that ingest hands each message its real predecessor, which that
    benchmark row needs at ingest. Edits and deletes embed no other message, in any form."""

    def with_previous(source: VectorSource) -> list[str]:
        alone = embedding_input(source.author_name, source.content, None)
        return [alone] if source.previous is None else [
            alone, embedding_input(source.author_name, source.content, source.previous)]

    monkeypatch.setattr(VectorSource, "texts", with_previous)


def expected_vector(embedder: EmbeddingService, author: str, content: str, previous: tuple[str, str] | None) -> np.ndarray:
    """The stored vector under the ``mean`` form: the message alone and after ``previous``, embedded, averaged (the
    message alone when ``previous`` is None: what the core stores)."""
    texts = [embedding_input(author, content, None)]
    texts += [embedding_input(author, content, previous)] if previous else []
    return embedder.embed_sync(texts).mean(axis=0)


class BatchRecorder:
    """The real model behind a recorder of what it is asked to embed; ``fail_first`` makes the first call raise."""

    def __init__(self, inner: EmbeddingService, fail_first: bool = False) -> None:
        self._inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.calls: list[list[str]] = []
        self._fail = fail_first

    @property
    def sizes(self) -> list[int]:
        return [len(texts) for texts in self.calls]

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self._fail:
            self._fail = False
            raise RuntimeError("model fell over")
        return await self._inner.embed(texts)


@pytest.fixture
async def recorded(store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService
                   ) -> AsyncIterator[tuple[IngestQueue, BatchRecorder]]:
    """A running ingest queue over the real model, behind a recorder."""
    recorder = BatchRecorder(embedder)
    queue = IngestQueue(store, recorder, indexes, batch_size=8, queue_size=64)
    queue.start()
    yield queue, recorder
    await queue.close()


async def vector_bytes(store: SqliteStore, message_id: int) -> bytes:
    """A message's stored vector exactly as written (to tell an untouched vector from one embedded again)."""
    rows = await fetchall(
        store, "SELECT vector FROM embeddings JOIN messages ON id = message_rowid WHERE message_id = ?", (message_id,))
    return bytes(rows[0][0])


async def contents(store: SqliteStore) -> list[str]:
    rows = await fetchall(store, "SELECT content FROM messages ORDER BY created_at, message_id")
    return [row[0] for row in rows]
