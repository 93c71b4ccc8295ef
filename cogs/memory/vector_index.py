"""VectorIndex: one guild's FAISS index (exact while small, IVF once large), saved atomically, checked on load."""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import faiss
import numpy as np

from .index_files import IndexFileError, IndexSaveError, read_index_file, why, write_index_file
from .store import MemoryStore, id_checksum

__all__ = ("IndexFileError", "IndexMeta", "IndexRegistry", "IndexSaveError", "VectorIndex")

T = TypeVar("T")

log = logging.getLogger(__name__)

# Flat search reads every vector (1.5 kB each for MiniLM): measured ~40 ms at 100k and ~300 ms at 1M on this
# shared 2-core box, so exact search stops well before 100k.
FLAT_MAX = 20_000
# An IVF index is retrained (more lists) once it holds this many times what it was trained for.
RETRAIN_GROWTH = 4
# Probes per query: aim to scan SCAN_TARGET vectors (~25 ms here), at least MIN_PROBES lists and at most a
# quarter of them. Real embeddings cluster, so this finds nearly all exact neighbours; random vectors, which do
# not cluster, are the worst case (bench/scale.py measures that recall).
SCAN_TARGET = 200_000
MAX_PROBE_FRACTION = 1 / 4
MIN_PROBES = 16
# A restriction to at most this many ids is searched exactly over just those vectors.
EXACT_SUBSET_MAX = 40_000
_TRAIN_POINTS_PER_LIST = 64


@dataclass(frozen=True, slots=True)
class IndexMeta:
    """What a saved index says it holds; compared with SQLite's fingerprint on load."""

    model: str
    dimension: int
    count: int
    checksum: int
    generation: int


def _unit_rows(vectors: np.ndarray, dimension: int) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dimension:
        raise ValueError(f"expected vectors of shape (n, {dimension}), got {vectors.shape}")
    return vectors


def _ids(ids: np.ndarray | list[int]) -> np.ndarray:
    return np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)


class VectorIndex:
    """Inner-product search over L2-normalised vectors (= cosine); ids are SQLite row ids.

    Not thread-safe: its owner (``IndexRegistry``) runs every call on one worker thread.
    """

    def __init__(self, dimension: int, model: str, flat_max: int = FLAT_MAX) -> None:
        self.dimension = dimension
        self.model = model
        self.flat_max = flat_max
        self._index: faiss.Index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        self._trained_for = 0
        self._id_cache: np.ndarray | None = None

    @property
    def kind(self) -> str:
        return "ivf" if isinstance(self._index, faiss.IndexIVF) else "flat"

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def memory_bytes(self) -> int:
        """Approximate resident size: the vectors, their ids, and the IVF centroids."""
        size = len(self) * (self.dimension * 4 + 8)
        if isinstance(self._index, faiss.IndexIVF):
            size += self._index.nlist * self.dimension * 4
        return size

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add vectors under ``ids``; an id already present is replaced (an edit re-embeds in place)."""
        ids = _ids(ids)
        vectors = _unit_rows(vectors, self.dimension)
        if len(ids) != len(vectors):
            raise ValueError("ids and vectors differ in length")
        if not len(ids):
            return
        self.remove(ids)
        self._id_cache = None
        self._index.add_with_ids(vectors, ids)
        if self.kind == "flat" and len(self) > self.flat_max:
            self._rebuild_ivf()
        elif self.kind == "ivf" and len(self) > RETRAIN_GROWTH * self._trained_for:
            self._rebuild_ivf()

    def remove(self, ids: np.ndarray) -> int:
        ids = _ids(ids)
        if not len(ids) or not len(self):
            return 0
        self._id_cache = None
        if isinstance(self._index, faiss.IndexIVF):
            # An IVF direct map (hashtable) only removes through an explicit id array.
            return int(self._index.remove_ids(faiss.IDSelectorArray(len(ids), faiss.swig_ptr(ids))))
        return int(self._index.remove_ids(faiss.IDSelectorBatch(ids)))

    def search(
        self, queries: np.ndarray, k: int, allowed_ids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, ids) per query, best first; missing results have id -1 and score -inf."""
        queries = _unit_rows(np.atleast_2d(queries), self.dimension)
        if allowed_ids is not None:
            allowed_ids = _ids(allowed_ids)
            if len(allowed_ids) <= EXACT_SUBSET_MAX:
                return self._search_subset(queries, k, allowed_ids)
        if not len(self) or k <= 0:
            return _empty(len(queries), max(k, 0))
        params = self._search_params(allowed_ids)
        scores, ids = self._index.search(queries, k, params=params)
        scores[ids < 0] = -np.inf
        return scores, ids

    def ids(self) -> np.ndarray:
        """Every id in the index, sorted."""
        if self._id_cache is None:
            if isinstance(self._index, faiss.IndexIVF):
                ids = self._ivf_contents(with_vectors=False)[0]
            else:
                ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
            self._id_cache = np.sort(ids)
        return self._id_cache

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors for ``ids`` (all must be present)."""
        ids = _ids(ids)
        if not len(ids):
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._index.reconstruct_batch(ids)

    def fingerprint(self) -> tuple[int, int]:
        return len(self), id_checksum(self.ids())

    # -- persistence ----------------------------------------------------------------------------------------

    def save(self, path: Path, generation: int) -> None:
        """Write atomically: a crash leaves either the old file or the new one, never half of one."""
        count, checksum = self.fingerprint()
        header = {"trained_for": self._trained_for, "flat_max": self.flat_max, "model": self.model,
                  "dimension": self.dimension, "count": count, "checksum": checksum, "generation": generation}
        write_index_file(path, header, self._index)

    @classmethod
    def load(cls, path: Path) -> tuple[VectorIndex, IndexMeta]:
        """Read a saved index; raises IndexFileError if the file is missing or does not hold what it claims."""
        header, index = read_index_file(path)
        meta = IndexMeta(header["model"], header["dimension"], header["count"], header["checksum"],
                         header["generation"])
        self = cls(meta.dimension, meta.model, flat_max=header["flat_max"])
        self._index = index
        self._trained_for = header["trained_for"]
        if isinstance(index, faiss.IndexIVF):
            index.set_direct_map_type(faiss.DirectMap.Hashtable)
        if index.d != meta.dimension or self.fingerprint() != (meta.count, meta.checksum):
            raise IndexFileError(f"{path} does not hold the vectors its header describes")
        return self, meta

    # -- internals ------------------------------------------------------------------------------------------

    def _search_params(self, allowed_ids: np.ndarray | None) -> faiss.SearchParameters | None:
        selector = faiss.IDSelectorBatch(allowed_ids) if allowed_ids is not None else None
        if isinstance(self._index, faiss.IndexIVF):
            return faiss.SearchParametersIVF(sel=selector, nprobe=self.nprobe())
        return faiss.SearchParameters(sel=selector) if selector is not None else None

    def nprobe(self) -> int:
        nlist = self._index.nlist
        per_list = max(1.0, len(self) / nlist)
        wanted = min(SCAN_TARGET / per_list, nlist * MAX_PROBE_FRACTION)
        return int(min(nlist, max(MIN_PROBES, math.ceil(wanted))))

    def _search_subset(self, queries: np.ndarray, k: int, allowed_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        present = allowed_ids[self._contains(allowed_ids)]
        if not len(present) or k <= 0:
            return _empty(len(queries), max(k, 0))
        scores = queries @ self.vectors(present).T
        top = min(k, len(present))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
        out_scores, out_ids = _empty(len(queries), k)
        out_scores[:, :top] = np.take_along_axis(scores, order, axis=1)
        out_ids[:, :top] = present[order]
        return out_scores, out_ids

    def _contains(self, ids: np.ndarray) -> np.ndarray:
        known = self.ids()
        positions = np.minimum(np.searchsorted(known, ids), max(len(known) - 1, 0))
        return known[positions] == ids if len(known) else np.zeros(len(ids), dtype=bool)

    def _ivf_contents(self, with_vectors: bool) -> tuple[np.ndarray, np.ndarray | None]:
        lists = self._index.invlists
        ids, codes = [], []
        for list_no in range(self._index.nlist):
            size = lists.list_size(list_no)
            if not size:
                continue
            ids.append(faiss.rev_swig_ptr(lists.get_ids(list_no), size).copy())
            if with_vectors:
                raw = faiss.rev_swig_ptr(lists.get_codes(list_no), size * self.dimension * 4)
                codes.append(np.frombuffer(raw.tobytes(), dtype=np.float32).reshape(size, self.dimension))
        all_ids = np.concatenate(ids).astype(np.int64) if ids else np.zeros(0, dtype=np.int64)
        if not with_vectors:
            return all_ids, None
        vectors = np.concatenate(codes) if codes else np.zeros((0, self.dimension), dtype=np.float32)
        return all_ids, vectors

    def _all(self) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(self._index, faiss.IndexIVF):
            ids, vectors = self._ivf_contents(with_vectors=True)
            return ids, vectors
        ids = faiss.vector_to_array(self._index.id_map).astype(np.int64)
        return ids, self._index.index.reconstruct_n(0, len(ids))

    def _rebuild_ivf(self) -> None:
        ids, vectors = self._all()
        count = len(ids)
        nlist = int(min(8192, max(64, round(math.sqrt(count)))))
        quantizer = faiss.IndexFlatIP(self.dimension)
        index = faiss.IndexIVFFlat(quantizer, self.dimension, nlist, faiss.METRIC_INNER_PRODUCT)
        index.own_fields = True
        quantizer.this.disown()
        rng = np.random.default_rng(count)
        sample = vectors[rng.choice(count, min(count, nlist * _TRAIN_POINTS_PER_LIST), replace=False)]
        index.train(sample)
        index.set_direct_map_type(faiss.DirectMap.Hashtable)
        index.add_with_ids(vectors, ids)
        log.info("Vector index (%s) now IVF with %d lists for %d vectors", self.model, nlist, count)
        self._index = index
        self._trained_for = count
        self._id_cache = None


def _empty(rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((rows, k), -np.inf, dtype=np.float32), np.full((rows, k), -1, dtype=np.int64)


class IndexRegistry:
    """Every guild's VectorIndex for one embedding model, and the one thread all FAISS work runs on.

    Loads and verifies each guild's saved index against SQLite on start, rebuilding it from SQLite's
    embeddings when the file is missing, unreadable or stale; saves are atomic. Callers serialise writes
    (the ingest writer holds its lock), so a saved generation always matches the saved vectors.
    """

    def __init__(self, store: MemoryStore, directory: Path, model: str, dimension: int) -> None:
        self._store = store
        self.directory = directory
        self.model = model
        self.dimension = dimension
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
        index = VectorIndex(self.dimension, self.model)
        async for ids, vectors in self._store.iter_embeddings(guild_id, self.model):
            await self._run(index.add, ids, vectors)
        log.info("Vector index of guild %d rebuilt: %d vectors (%s)", guild_id, len(index), index.kind)
        return index

    def _index(self, guild_id: int) -> VectorIndex:
        index = self._indexes.get(guild_id)
        if index is None:
            index = self._indexes[guild_id] = VectorIndex(self.dimension, self.model)
        return index

    async def add(self, guild_id: int, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Add or replace vectors."""
        self._dirty.add(guild_id)
        await self._run(self._index(guild_id).add, ids, vectors)

    async def remove(self, guild_id: int, ids: np.ndarray) -> int:
        if guild_id not in self._indexes:
            return 0
        self._dirty.add(guild_id)
        return await self._run(self._indexes[guild_id].remove, ids)

    async def search(
        self, guild_id: int, queries: np.ndarray, k: int, allowed_ids: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        index = self._indexes.get(guild_id)
        if index is None:
            return _empty(len(np.atleast_2d(queries)), k)
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
