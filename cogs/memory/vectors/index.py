"""VectorIndex: one guild's FAISS index (exact while small, an HNSW graph once large), saved atomically, checked
on load. Every guild's index together, and the thread FAISS runs on: registry.py."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .files import IndexFileError, IndexMeta, IndexSaveError, read_index_file, write_index_file
from ..runtime.lazy_module import LazyModule
from .hnsw import HnswGraph, ef_for

if TYPE_CHECKING:
    import faiss
else:  # imported when an index is first built or read: a light command (stats, forget) never does
    faiss = LazyModule("faiss")

__all__ = ("CHECKSUM_K", "CHECKSUM_P", "EmbeddingSource", "IndexFileError", "IndexMeta", "IndexSaveError",
           "IndexUsage", "VectorIndex", "empty_results", "id_checksum")


log = logging.getLogger(__name__)

# Exact search reads every vector (1.5 kB each for MiniLM). On one thread here it takes p95 ~2 ms at 10k,
# ~5 ms at 20k and ~16 ms at 50k (and ~10x more with FAISS's two OpenMP threads when the other core is busy);
# the HNSW graph answers in ~3 ms at any of these sizes, so exact search stops at 20k.
FLAT_MAX = 20_000
# Tombstoned (removed) nodes are rebuilt away once they outnumber this share of the live ones: at 100k, recall@10
# stayed 0.95 with half of the graph dead at ef 256.
DEAD_REBUILD_FRACTION = 0.5
# A restriction to at most this many ids is searched exactly over just those vectors.
EXACT_SUBSET_MAX = 40_000


# An id set's checksum: the sum of each id times K modulo P (order-free, cheap in SQL and in numpy alike). The store computes the same in SQL over the vectors it
# holds (the SQLite store's SELECT_FINGERPRINT), so a saved index is checked against it without reading a vector.
CHECKSUM_K = 2654435761
CHECKSUM_P = 4294967291


def id_checksum(ids: np.ndarray) -> int:
    """The checksum the store's fingerprint computes in SQL, for an index's own ids."""
    return int(((ids.astype(np.int64) * CHECKSUM_K) % CHECKSUM_P).sum())


@dataclass(frozen=True, slots=True)
class IndexUsage:
    """One guild's vector index as stats show it: its vectors, their bytes in memory and on disk, and its kind."""

    vectors: int
    memory_bytes: int
    file_bytes: int
    kind: str


class EmbeddingSource(Protocol):
    """What the index registry reads of a store: its guilds, and each guild's vectors with their fingerprint."""

    async def guild_ids(self) -> list[int]: ...
    async def index_fingerprint(self, guild_id: int, model: str) -> tuple[int, int, int]: ...
    async def index_generation(self, guild_id: int, model: str) -> int: ...
    def iter_embeddings(self, guild_id: int, model: str,
                        page: int = 50_000) -> AsyncIterator[tuple[np.ndarray, np.ndarray]]: ...


def _unit_rows(vectors: np.ndarray, dimension: int) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dimension:
        raise ValueError(f"expected vectors of shape (n, {dimension}), got {vectors.shape}")
    return vectors


def _ids(ids: np.ndarray | list[int]) -> np.ndarray:
    return np.ascontiguousarray(ids, dtype=np.int64).reshape(-1)


@contextmanager
def _one_thread() -> Iterator[None]:
    """One query runs on one OpenMP thread: a second one only waits for the other core when that core is busy."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # this thread's setting only, so adds elsewhere keep theirs
    try:
        yield
    finally:
        faiss.omp_set_num_threads(threads)


class VectorIndex:
    """Inner-product search over stored vectors (each the mean of two unit vectors, vectors.py); ids are SQLite row ids.

    Exact (a flat index) up to ``flat_max`` vectors, an HNSW graph above; the kind follows the size whenever
    the index is built or rebuilt. Not thread-safe: its owner (``IndexRegistry``) runs every call on one
    worker thread.
    """

    def __init__(self, dimension: int, model: str, flat_max: int | None = None) -> None:
        self.dimension = dimension
        self.model = model
        self.flat_max = FLAT_MAX if flat_max is None else flat_max
        self.ef_search: int | None = None  # candidates an HNSW search keeps; None: as many as its size calls for
        self._index: faiss.IndexIDMap2 | HnswGraph = _flat_index(dimension)
        self._id_cache: np.ndarray | None = None

    @property
    def kind(self) -> str:
        return "hnsw" if isinstance(self._index, HnswGraph) else "flat"

    def __len__(self) -> int:
        return len(self._index) if isinstance(self._index, HnswGraph) else int(self._index.ntotal)

    @property
    def tombstones(self) -> int:
        """Removed vectors an HNSW graph still holds (zeroed and filtered out) until its next rebuild."""
        return self._index.dead if isinstance(self._index, HnswGraph) else 0

    def memory_bytes(self) -> int:
        """Approximate resident size: the vectors and their ids, and the HNSW graph's links and tombstones."""
        if isinstance(self._index, HnswGraph):
            return self._index.memory_bytes()
        return len(self) * (self.dimension * 4 + 8)

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
        if isinstance(self._index, HnswGraph):
            self._index.add(ids, vectors)
            return
        self._index.add_with_ids(vectors, ids)
        if len(self) > self.flat_max:
            self._rebuild(*self._flat_contents(self._index))

    def remove(self, ids: np.ndarray) -> int:
        ids = _ids(ids)
        if not len(ids) or not len(self):
            return 0
        self._id_cache = None
        graph = self._index
        if not isinstance(graph, HnswGraph):
            return int(graph.remove_ids(faiss.IDSelectorBatch(ids)))
        removed = graph.remove(ids)
        if graph.dead > DEAD_REBUILD_FRACTION * len(graph):
            self._rebuild(*graph.live_contents())
        return removed

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
            return empty_results(len(queries), max(k, 0))
        with _one_thread():
            if isinstance(self._index, HnswGraph):
                return self._index.search(queries, k, self.ef_search or ef_for(len(self)), allowed_ids)
            params = None
            if allowed_ids is not None:
                params = faiss.SearchParameters()
                params.sel = faiss.IDSelectorBatch(allowed_ids)
            scores, ids = self._index.search(queries, k, params=params)
        scores[ids < 0] = -np.inf
        return scores, ids

    def ids(self) -> np.ndarray:
        """Every id in the index, sorted."""
        if self._id_cache is None:
            if isinstance(self._index, HnswGraph):
                self._id_cache = self._index.sorted_ids()
            else:
                self._id_cache = np.sort(faiss.vector_to_array(self._index.id_map).astype(np.int64))
        return self._id_cache

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors for ``ids`` (all must be present)."""
        ids = _ids(ids)
        if not len(ids):
            return np.zeros((0, self.dimension), dtype=np.float32)
        if isinstance(self._index, HnswGraph):
            return self._index.vectors(ids)
        return self._index.reconstruct_batch(ids)

    def fingerprint(self) -> tuple[int, int]:
        return len(self), id_checksum(self.ids())

    # -- persistence ----------------------------------------------------------------------------------------

    def save(self, path: Path, generation: int) -> None:
        """Write atomically: a crash leaves either the old file or the new one, never half of one."""
        count, checksum = self.fingerprint()
        header = {"kind": self.kind, "flat_max": self.flat_max, "model": self.model, "dimension": self.dimension,
                  "count": count, "checksum": checksum, "generation": generation}
        arrays = (self._index.to_arrays() if isinstance(self._index, HnswGraph)
                  else {"index": faiss.serialize_index(self._index)})
        write_index_file(path, header, arrays)

    @classmethod
    def load(cls, path: Path) -> tuple[VectorIndex, IndexMeta]:
        """Read a saved index; raises IndexFileError if the file is missing or does not hold what it claims."""
        header, arrays = read_index_file(path)
        try:
            meta = IndexMeta(header["model"], header["dimension"], header["count"], header["checksum"],
                             header["generation"])
            self = cls(meta.dimension, meta.model, flat_max=header["flat_max"])
            if header["kind"] == "hnsw":
                self._index = HnswGraph.from_arrays(arrays)
            else:
                flat = faiss.deserialize_index(arrays["index"])
                if not isinstance(flat, faiss.IndexIDMap2):
                    raise ValueError(f"expected a flat index with ids, found {type(flat).__name__}")
                self._index = flat
        except (ValueError, KeyError, TypeError, RuntimeError) as exc:
            raise IndexFileError(f"{path} is unreadable: {type(exc).__name__}: {exc}") from exc
        dimension = self._index.dimension if isinstance(self._index, HnswGraph) else self._index.d
        if dimension != meta.dimension or self.fingerprint() != (meta.count, meta.checksum):
            raise IndexFileError(f"{path} does not hold the vectors its header describes")
        return self, meta

    # -- internals ------------------------------------------------------------------------------------------

    def _search_subset(self, queries: np.ndarray, k: int, allowed_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        present = allowed_ids[self._contains(allowed_ids)]
        if not len(present) or k <= 0:
            return empty_results(len(queries), max(k, 0))
        scores = queries @ self.vectors(present).T
        top = min(k, len(present))
        order = np.argsort(-scores, axis=1, kind="stable")[:, :top]
        out_scores, out_ids = empty_results(len(queries), k)
        out_scores[:, :top] = np.take_along_axis(scores, order, axis=1)
        out_ids[:, :top] = present[order]
        return out_scores, out_ids

    def _contains(self, ids: np.ndarray) -> np.ndarray:
        known = self.ids()
        positions = np.minimum(np.searchsorted(known, ids), max(len(known) - 1, 0))
        return known[positions] == ids if len(known) else np.zeros(len(ids), dtype=bool)

    def _flat_contents(self, flat: faiss.IndexIDMap2) -> tuple[np.ndarray, np.ndarray]:
        ids = faiss.vector_to_array(flat.id_map).astype(np.int64)
        return ids, flat.index.reconstruct_n(0, len(ids))

    def _rebuild(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Hold exactly these vectors, in the kind their count calls for (this drops every tombstone)."""
        self._id_cache = None
        if len(ids) <= self.flat_max:
            self._index = _flat_index(self.dimension)
            self._index.add_with_ids(vectors, ids)
            return
        graph = HnswGraph.empty(self.dimension)
        graph.add(ids, vectors)
        self._index = graph
        log.info("Vector index (%s) now an HNSW graph of %d vectors", self.model, len(ids))


def _flat_index(dimension: int) -> faiss.IndexIDMap2:
    """An exact index by inner product, its vectors kept under their ids."""
    return faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))


def empty_results(rows: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.full((rows, k), -np.inf, dtype=np.float32), np.full((rows, k), -1, dtype=np.int64)
