"""Memory: the one object the cog and the CLI use — storage, embedding, indexes, ingest, search and recall."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .embedding import EmbeddingModelError, EmbeddingService
from .ingest import IngestQueue
from .profile import ProfileError
from .records import MessageRecord, SearchFilters
from .search import SearchEngine
from .store import MemoryStore, WriteBatch
from .text import embedding_input
from .vector_index import IndexRegistry

__all__ = ("Memory", "MemoryOpenError")

log = logging.getLogger(__name__)

# Changed indexes are saved this often, so a crash costs at most this much rebuilding work... or none:
# a stale index is detected on start and rebuilt from SQLite either way.
AUTOSAVE_INTERVAL_S = 300.0


class MemoryOpenError(RuntimeError):
    """Memory could not start; the message says what to fix. Already logged in one line."""


def _embedder_for(profile: Any) -> EmbeddingService:
    return EmbeddingService(profile.embedding_model, device=profile.device, dtype=profile.dtype,
                            batch_size=profile.embedding_batch_size, **_prefixes(profile))


def _prefixes(profile: Any) -> dict[str, str | None]:
    return {"query_prefix": getattr(profile, "embedding_query_prefix", None),
            "passage_prefix": getattr(profile, "embedding_passage_prefix", None)}


def _wants_reranker(profile: Any) -> bool:
    settings = getattr(profile, "reranker", None)
    return settings is not None and settings.enabled and settings.provider != "none"


class Memory:
    """Facade over MemoryStore, EmbeddingService, IndexRegistry, IngestQueue, SearchEngine and the reranker.

    ``profile`` is duck-typed on ``profile.MemoryProfile``'s fields (core code reads the non-reranker ones).
    """

    def __init__(self, profile: Any, store: MemoryStore, embedder: EmbeddingService, indexes: IndexRegistry,
                 ingest: IngestQueue, reranker: Any | None) -> None:
        self.profile = profile
        self.store = store
        self.embedder = embedder
        self.indexes = indexes
        self.ingest = ingest
        self.reranker = reranker
        self.search_engine = SearchEngine(store, embedder, indexes, profile)
        self._autosave: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, profile: Any, db_path: Path, index_dir: Path) -> Memory:
        """Open the database, load the embedding model and every guild's index (rebuilt if stale), start ingest."""
        store = await MemoryStore.open(db_path)
        embedder = _embedder_for(profile)
        try:
            await embedder.start()
        except EmbeddingModelError as exc:
            await store.close()
            await embedder.close()
            log.error("Memory cannot start: %s. Set embedding_model in profile %r to an installed "
                      "sentence-transformers model id or a local model directory.", exc, profile.name)
            raise MemoryOpenError(str(exc)) from None
        indexes = IndexRegistry(store, index_dir, embedder.model_name, embedder.dimension)
        try:
            await indexes.load_all()
        except BaseException:
            await embedder.close()
            await store.close()
            raise
        ingest = IngestQueue(store, embedder, indexes, batch_size=profile.ingest_batch_size,
                             queue_size=profile.ingest_queue_size)
        ingest.start()
        memory = cls(profile, store, embedder, indexes, ingest, _build_reranker(profile))
        memory._autosave = asyncio.create_task(memory._autosave_loop(), name="memory-autosave")
        log.info("Memory open: profile %s, %s, %d guild index(es)", profile.name, db_path,
                 len(await store.guild_ids()))
        return memory

    async def close(self) -> None:
        """Flush the queue, save the indexes, close the database (and the models' threads)."""
        if self._autosave is not None:
            self._autosave.cancel()
            await asyncio.gather(self._autosave, return_exceptions=True)
        await self.ingest.close()
        await self.indexes.close()
        await self.embedder.close()
        if self.reranker is not None:
            await self.reranker.aclose()
        await self.store.close()

    async def _autosave_loop(self) -> None:
        while True:
            await asyncio.sleep(AUTOSAVE_INTERVAL_S)
            try:
                await self.save()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Saving the vector indexes failed; they will be checked and rebuilt on start")

    async def save(self) -> None:
        """Save changed indexes now (between ingest writes, so each file matches SQLite)."""
        async with self.ingest.write_lock:
            await self.indexes.save_dirty()

    # -- capture --------------------------------------------------------------------------------------------

    async def add(self, record: MessageRecord) -> None:
        await self.ingest.add(record)

    async def flush(self) -> None:
        await self.ingest.flush()

    async def edit(self, message_id: int, content: str, edited_at: datetime | None) -> bool:
        return await self.ingest.edit(message_id, content, edited_at)

    async def delete(self, message_ids: Sequence[int]) -> int:
        return await self.ingest.delete(message_ids)

    async def delete_channel(self, guild_id: int, channel_id: int) -> int:
        return await self.ingest.delete_channel(guild_id, channel_id)

    async def delete_guild(self, guild_id: int) -> int:
        return await self.ingest.delete_guild(guild_id)

    async def delete_author(self, guild_id: int | None, author_id: int) -> int:
        return await self.ingest.delete_author(guild_id, author_id)

    # -- retrieval ------------------------------------------------------------------------------------------

    async def search(self, query: str, filters: SearchFilters, limit: int | None = None) -> list[dict]:
        """First-stage hybrid candidates (no reranking), best first."""
        return await self.search_engine.search(query, filters, limit or self.profile.search_limit)

    async def recall(self, query: str, filters: SearchFilters, limit: int | None = None,
                     rerank: bool = True) -> list[dict]:
        """Search, then rerank with the profile's reranker; without one, first-stage order (rerank_score None)."""
        # One snapshot: a live profile switch may replace both while this recall awaits.
        profile, reranker = self.profile, self.reranker
        limit = limit or profile.search_limit
        if not rerank or reranker is None:
            return [{**candidate, "rerank_score": None} for candidate in await self.search(query, filters, limit)]
        candidates = await self.search(query, filters, max(limit, profile.reranker.candidates))
        return await reranker.arerank_results(query, candidates, top_k=limit)

    async def stats(self, guild_id: int) -> dict[str, Any]:
        index = self.indexes.get(guild_id)
        path = self.indexes.path_for(guild_id)
        file_bytes = await asyncio.to_thread(lambda: path.stat().st_size if path.exists() else 0)
        return {
            "messages": await self.store.count_messages(guild_id),
            "vectors": self.indexes.count(guild_id),
            "index_size_bytes": self.indexes.memory_bytes(guild_id),
            "index_file_bytes": file_bytes,
            "index_kind": index.kind if index is not None else "none",
            "embedding_model": self.embedder.model_name,
            "queued": self.ingest.queued,
        }

    # -- profiles -------------------------------------------------------------------------------------------

    async def switch_profile(self, profile: Any) -> None:
        """Apply another profile live; on failure the current profile stays whole and ``ProfileError`` says why.

        The new models load first, beside the old ones; only then is anything swapped. A new embedding model
        re-embeds every stored message before it is used.
        """
        same_embedder = (profile.embedding_model, profile.device, profile.dtype, _prefixes(profile)) == (
            self.profile.embedding_model, self.profile.device, self.profile.dtype, _prefixes(self.profile))
        embedder = self.embedder
        if not same_embedder:
            embedder = _embedder_for(profile)
            await embedder.start()  # a model that cannot load raises here, with nothing changed yet
        if self.reranker is not None and _wants_reranker(profile) and not await self.reranker.switch(profile):
            if embedder is not self.embedder:
                await embedder.close()
            raise ProfileError(f"the reranker of profile {profile.name!r} did not load: "
                               f"{self.reranker.status()['last_switch_error']}")
        embedder.batch_size = profile.embedding_batch_size
        await self.ingest.flush()
        async with self.ingest.write_lock:
            indexes = self.indexes
            if embedder.model_name != self.embedder.model_name:
                await self._backfill(embedder)
                await self.indexes.close()
                indexes = IndexRegistry(self.store, self.indexes.directory, embedder.model_name, embedder.dimension)
                await indexes.load_all()
            old = self.embedder
            self.ingest.use(embedder, indexes, batch_size=profile.ingest_batch_size)
            self.embedder, self.indexes, self.profile = embedder, indexes, profile
            self.search_engine = SearchEngine(self.store, embedder, indexes, profile)
        if old is not embedder:
            await old.close()
        if self.reranker is not None and not _wants_reranker(profile):
            await self.reranker.aclose()
            self.reranker = None
        elif self.reranker is None:
            self.reranker = _build_reranker(profile)
        log.info("Memory switched to profile %s", profile.name)

    async def _backfill(self, embedder: EmbeddingService) -> None:
        """Embed, with ``embedder``, every stored message that has no vector for its model yet."""
        total = 0
        for guild_id in await self.store.guild_ids():
            for channel_id in await self.store.channel_ids(guild_id):
                pending: list[tuple[int, str]] = []
                previous = None
                async for message in self.store.iter_channel(guild_id, channel_id):
                    if not await self.store.has_vector(message.rowid, embedder.model_name):
                        pending.append((message.rowid, embedding_input(message.author_name, message.content,
                                                                       previous)))
                    previous = (message.author_name, message.content)
                    if len(pending) >= 256:
                        total += await self._write_backfill(embedder, guild_id, pending)
                if pending:
                    total += await self._write_backfill(embedder, guild_id, pending)
        log.info("Embedded %d stored messages with %s", total, embedder.model_name)

    async def _write_backfill(self, embedder: EmbeddingService, guild_id: int, pending: list[tuple[int, str]]) -> int:
        vectors = await embedder.embed([text for _, text in pending])
        batch = WriteBatch(embedder.model_name, guild_ids={guild_id})
        batch.vectors = [(rowid, vector) for (rowid, _), vector in zip(pending, vectors, strict=True)]
        await self.store.write(batch)
        count = len(pending)
        pending.clear()
        return count


def _build_reranker(profile: Any) -> Any | None:
    if not _wants_reranker(profile):
        return None
    try:
        from .reranker_service import RerankerService
    except ImportError:
        log.warning("Reranking is enabled in profile %s but reranker_service is not available", profile.name)
        return None
    return RerankerService(profile)
