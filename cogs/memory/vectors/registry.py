"""IndexRegistry: every guild's VectorIndex (index.py) for one embedding model, loaded and checked against the store,
rebuilt from it when stale, saved atomically, and the one thread all FAISS work runs on."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .files import IndexFileError, IndexSaveError, why
from . import index as index_module
from .index import EmbeddingSource, IndexUsage, VectorIndex, empty_results

__all__ = ("IndexRegistry",)

T = TypeVar("T")

log = logging.getLogger(__name__)


class IndexRegistry:
    """Every guild's VectorIndex for one embedding model, and the one thread all FAISS work runs on.

    Loads and verifies each guild's saved index against SQLite on start, rebuilding it from SQLite's
    embeddings when the file is missing, unreadable or stale; saves are atomic. Callers serialise writes
    (the ingest writer holds its lock), so a saved generation always matches the saved vectors.

    ``dimension`` 0 (a light command, no embedding model loaded): ``load_all`` loads nothing and a guild's index
    loads when first changed or searched, with the dimension its file or stored vectors have; ``usage`` of one not
    loaded is read from SQLite, so ``stats`` imports no FAISS.
    """

    def __init__(self, store: EmbeddingSource, directory: Path, model: str, dimension: int) -> None:
        self._store = store
        self.directory = directory
        self.model = model
        self.dimension = dimension
        self.on_demand = dimension == 0
        self._indexes: dict[int, VectorIndex] = {}
        self._dirty: set[int] = set()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="faiss")

    def path_for(self, guild_id: int) -> Path:
        return self.directory / f"{guild_id}.{self._file_suffix()}"

    def _file_suffix(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", self.model).strip("_") or "model"
        return f"{slug}.faiss"

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    async def load_all(self) -> None:
        if self.on_demand:
            return
        for guild_id in await self._store.guild_ids():
            await self.load(guild_id)

    async def load(self, guild_id: int) -> VectorIndex:
        """Load a guild's index and check it against SQLite; rebuild it from SQLite if it does not match."""
        count, checksum, generation = await self._store.index_fingerprint(guild_id, self.model)
        path = self.path_for(guild_id)
        reason: str | None = None
        try:
            index, meta = await self._run(VectorIndex.load, path)
        except IndexFileError as exc:
            index = None
            reason = None if count == 0 and not path.exists() else str(exc)
        else:
            if self.on_demand and meta.model == self.model:
                self.dimension = meta.dimension
            if (meta.model, meta.dimension) != (self.model, self.dimension):
                reason = f"it was built for {meta.model} ({meta.dimension}d)"
            elif (meta.count, meta.checksum, meta.generation) != (count, checksum, generation):
                reason = (f"it is stale ({meta.count} vectors at generation {meta.generation}; SQLite has "
                          f"{count} at generation {generation})")
        if index is None or reason is not None:
            if reason is not None:
                log.warning("Rebuilding the vector index of guild %d from SQLite: %s", guild_id, reason)
            index = self._indexes[guild_id] = await self._rebuild(guild_id)
            try:
                await self._save(guild_id, generation)
            except IndexSaveError as exc:
                # Starting must not need to write (a full disk, a folder where the file goes): search works from
                # the index in memory, and the save is tried again with the next one.
                log.warning("%s; it is kept in memory, and saved once that works", exc)
        self._indexes[guild_id] = index
        return index

    async def _rebuild(self, guild_id: int) -> VectorIndex:
        index: VectorIndex | None = None
        async for ids, vectors in self._store.iter_embeddings(guild_id, self.model):
            if index is None:
                self.dimension = self.dimension or int(vectors.shape[1])
                index = VectorIndex(self.dimension, self.model)
            await self._run(index.add, ids, vectors)
        if index is None:
            index = VectorIndex(self.dimension, self.model)
        log.info("Vector index of guild %d rebuilt: %d vectors (%s)", guild_id, len(index), index.kind)
        return index

    async def loaded(self, guild_id: int) -> None:
        """Loads a guild's index before its first use when they load on demand: before the store changes under it
        (ingest calls it first), so that it loads checked against SQLite instead of rebuilt."""
        if not self.on_demand or guild_id in self._indexes:
            return
        path = self.path_for(guild_id)
        # Neither a file nor a stored vector (nor a dimension yet): nothing to load, nothing an empty file would hold.
        if (self.dimension or await asyncio.to_thread(path.exists)
                or (await self._store.index_fingerprint(guild_id, self.model))[0]):
            await self.load(guild_id)

    def _index(self, guild_id: int) -> VectorIndex:
        index = self._indexes.get(guild_id)
        if index is None:
            index = self._indexes[guild_id] = VectorIndex(self.dimension, self.model)
        return index

    async def add(self, guild_id: int, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add or replace vectors."""
        self.dimension = self.dimension or int(vectors.shape[1])
        await self.loaded(guild_id)
        self._dirty.add(guild_id)
        await self._run(self._index(guild_id).add, ids, vectors)

    async def remove(self, guild_id: int, ids: np.ndarray) -> int:
        await self.loaded(guild_id)
        if guild_id not in self._indexes:
            return 0
        self._dirty.add(guild_id)
        return await self._run(self._indexes[guild_id].remove, ids)

    async def search(
        self, guild_id: int, queries: np.ndarray, k: int, allowed_ids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        await self.loaded(guild_id)
        index = self._indexes.get(guild_id)
        if index is None:
            return empty_results(len(np.atleast_2d(queries)), k)
        return await self._run(index.search, queries, k, allowed_ids)

    async def drop(self, guild_id: int) -> None:
        """Forget a guild's index and its files (every model's, and any temporary one)."""
        self._indexes.pop(guild_id, None)
        self._dirty.discard(guild_id)
        await self._run(self._unlink_files, lambda name: name.partition(".")[0] == str(guild_id))

    async def remove_stale_files(self) -> None:
        """Delete the files no index of this model is saved in: other models' indexes (they hold vectors of
        messages forgotten since, and are rebuilt from SQLite if that model comes back) and temporary files a crash
        left mid-save."""
        suffix = self._file_suffix()
        await self._run(self._unlink_files, lambda name: name.partition(".")[2] != suffix)

    def _unlink_files(self, matches: Callable[[str], bool]) -> None:
        """Delete the index files (saved or temporary) whose names ``matches``; on the FAISS thread, so no save
        is writing one meanwhile."""
        if not self.directory.is_dir():
            return
        for path in self.directory.iterdir():
            # A folder with such a name holds no index (and would make unlink fail).
            if path.name.endswith((".faiss", ".faiss.tmp")) and matches(path.name) and not path.is_dir():
                path.unlink(missing_ok=True)

    def count(self, guild_id: int) -> int:
        index = self._indexes.get(guild_id)
        return len(index) if index is not None else 0

    def memory_bytes(self, guild_id: int) -> int:
        index = self._indexes.get(guild_id)
        return index.memory_bytes() if index is not None else 0

    def get(self, guild_id: int) -> VectorIndex | None:
        return self._indexes.get(guild_id)

    async def usage(self, guild_id: int) -> IndexUsage:
        index = self._indexes.get(guild_id)
        path = self.path_for(guild_id)
        file_bytes = await asyncio.to_thread(lambda: path.stat().st_size if path.exists() else 0)
        if index is None and self.on_demand:  # what loading it would hold: SQLite's vectors (checked as it loads)
            count = (await self._store.index_fingerprint(guild_id, self.model))[0]
            return IndexUsage(count, 0, file_bytes, "flat" if count <= index_module.FLAT_MAX else "hnsw")
        return IndexUsage(self.count(guild_id), self.memory_bytes(guild_id), file_bytes,
                          index.kind if index is not None else "none")

    async def save_dirty(self) -> None:
        """Save every index changed since its last save; callers must hold the writer's lock.

        Each index is tried; one that could not be saved stays due, and IndexSaveError then says which and why.
        """
        failures: list[str] = []
        for guild_id in sorted(self._dirty):
            generation = await self._store.index_generation(guild_id, self.model)
            try:
                await self._save(guild_id, generation)
            except IndexSaveError as exc:
                failures.append(str(exc))
        if failures:
            raise IndexSaveError("; ".join(failures))

    async def _save(self, guild_id: int, generation: int) -> None:
        try:
            await self._run(self._indexes[guild_id].save, self.path_for(guild_id), generation)
        except OSError as exc:
            self._dirty.add(guild_id)
            raise IndexSaveError(f"Could not save the vector index of guild {guild_id}: {why(exc)}") from exc
        self._dirty.discard(guild_id)

    async def close(self) -> None:
        """Save what changed, then stop the FAISS thread, whatever the save did.

        A failed save is logged, not raised: SQLite holds every vector, and the next start rebuilds the file.
        """
        try:
            await self.save_dirty()
        except IndexSaveError as exc:
            log.warning("%s; the next start rebuilds it from SQLite", exc)
        finally:
            await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)
