"""Embedding every stored message again with a new model, before a profile switch starts using it."""

from __future__ import annotations

import logging
import sqlite3

from ..vectors.embedding import EmbeddingService
from ..store.rows import WriteBatch
from ..store.protocol import Reembedding, StoreUpkeep
from ..vectors.stored import VectorSource, stored_vectors

__all__ = ("mark_unembedded", "reembed_all")

log = logging.getLogger(__name__)

# Messages embedded and written together.
_CHUNK = 256


async def reembed_all(store: Reembedding, embedder: EmbeddingService) -> int:
    """Embed, with ``embedder``, every stored message that has no vector for its model yet; returns how many.

    Call with ingest's write lock held: each message is embedded as ingest embeds it (vectors.stored_vectors).
    """
    total = 0
    for guild_id in await store.guild_ids():
        for channel_id in await store.channel_ids(guild_id):
            pending: list[tuple[int, VectorSource]] = []
            previous = None
            async for message in store.iter_channel(guild_id, channel_id):
                if not await store.has_vector(message.rowid, embedder.model_name):
                    pending.append((message.rowid, VectorSource(message.author_name, message.content, previous)))
                previous = (message.author_name, message.content)
                if len(pending) >= _CHUNK:
                    total += await _write(store, embedder, guild_id, pending)
            if pending:
                total += await _write(store, embedder, guild_id, pending)
    log.info("Embedded %d stored messages with %s", total, embedder.model_name)
    return total


async def _write(store: Reembedding, embedder: EmbeddingService, guild_id: int,
                 pending: list[tuple[int, VectorSource]]) -> int:
    vectors = await stored_vectors(embedder, [source for _, source in pending])
    batch = WriteBatch(embedder.model_name, guild_ids={guild_id})
    batch.vectors = [(rowid, vector) for (rowid, _), vector in zip(pending, vectors, strict=True)]
    await store.write(batch)
    count = len(pending)
    pending.clear()
    return count


async def mark_unembedded(store: StoreUpkeep, model: str) -> None:
    """Mark the stored messages with no vector under ``model`` as waiting for one, so the vector filler embeds them
    in the background: after a restart with another embedding model or input form (embedding.INPUT_FORM)."""
    try:
        marked = await store.mark_unembedded(model)
    except sqlite3.OperationalError as exc:  # another process holds the write lock, or the disk is full
        log.warning("Could not mark the stored messages without a vector for %s now (%s); the next start does",
                    model, exc)
        return
    if marked:
        log.info("%d stored messages have no vector for %s; they are embedded in the background", marked, model)
