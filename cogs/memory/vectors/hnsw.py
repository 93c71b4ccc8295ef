"""HnswGraph: a FAISS inner-product HNSW graph keyed by SQLite row ids, where removal leaves a zeroed tombstone."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np

from ..runtime.lazy_module import LazyModule

if TYPE_CHECKING:
    import faiss
else:  # imported when a graph is first built or read (index.py)
    faiss = LazyModule("faiss")

__all__ = ("HnswGraph", "ef_for")

# Links per node (twice as many on the base layer) and candidates kept while linking a new node. Questions sit
# farther from every message than messages sit from each other, and a graph linked with FAISS's default 40 leads
# them astray: at 1M perturbed real MiniLM vectors, searched with perturbed real questions at ef 768, recall@10 vs
# exact was 0.897 linked with 40 and 0.982 with 100, for twice the build time and the same search time.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 100
# Candidates a search keeps, by graph size. Recall@10 vs exact on perturbed real MiniLM vectors, searched with
# perturbed real questions (bench/scale.py): at 100k 0.991 at ef 384; at 1M 0.84 / 0.931 / 0.975 / 0.981 / 0.993 /
# 0.998 at ef 128 / 256 / 384 / 512 / 768 / 1024 (3.2 ms p95 at 768). Recall falls as a graph grows, so above
# EF_GROWS_AT it keeps 768.
HNSW_EF_SEARCH = 384
HNSW_EF_SEARCH_LARGE = 768
EF_GROWS_AT = 100_000
# A restricted search keeps more candidates (ef / the share of live vectors allowed), up to this many, so that
# enough of them pass the restriction.
EF_RESTRICTED_MAX = 4_096


def ef_for(count: int) -> int:
    """Candidates a search keeps in a graph of ``count`` live vectors."""
    return HNSW_EF_SEARCH if count <= EF_GROWS_AT else HNSW_EF_SEARCH_LARGE


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` with room for ``size`` entries (doubling, so appends are amortised O(1))."""
    if size <= len(array):
        return array
    grown = np.zeros(max(size, 2 * len(array), 1_024), dtype=array.dtype)
    grown[: len(array)] = array
    return grown


class HnswGraph:
    """IndexHNSWFlat (graph labels 0..n-1), the row id of each label, and which labels are live.

    HNSW cannot unlink a node, so a removed vector is overwritten with zeros (no copy of it is kept, in memory
    or in a saved file) and every search filters its label out; the node still routes searches past it. Its
    owner rebuilds the graph once ``dead`` grows large. Row ids only grow, so a batch of new ids is told apart
    from replacements without a lookup. Not thread-safe.
    """

    def __init__(self, index: faiss.IndexHNSWFlat, label_ids: np.ndarray, live: np.ndarray) -> None:
        if not (index.ntotal == len(label_ids) == len(live)):
            raise ValueError("graph, ids and live flags differ in length")
        self._index = index
        self._label_ids = label_ids.astype(np.int64)
        self._live = live.astype(bool)
        self._live_count = int(self._live.sum())
        self._max_id = int(self._label_ids.max()) if len(self._label_ids) else -1
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None  # live (ids, labels), sorted by id
        self._live_bits: np.ndarray | None = None

    @classmethod
    def empty(cls, dimension: int) -> HnswGraph:
        index = faiss.IndexHNSWFlat(dimension, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        return cls(index, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))

    @property
    def dimension(self) -> int:
        return int(self._index.d)

    @property
    def size(self) -> int:
        """Nodes in the graph, live and dead."""
        return int(self._index.ntotal)

    @property
    def dead(self) -> int:
        return self.size - self._live_count

    def __len__(self) -> int:
        return self._live_count

    def memory_bytes(self) -> int:
        hnsw = self._index.hnsw
        # faiss's stub (1.15) leaves out HNSW's neighbors and offsets vectors.
        links = hnsw.neighbors.size() * 4 + hnsw.offsets.size() * 8  # type: ignore[attr-defined]
        return int(self.size * (self.dimension * 4 + 8 + 1) + links + hnsw.levels.size() * 4)

    # -- changes --------------------------------------------------------------------------------------------

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Link new nodes; ``ids`` must not be live already (the owner removes replaced ids first)."""
        start = self.size
        self._index.add(vectors)
        self._label_ids = _grown(self._label_ids, self.size)
        self._live = _grown(self._live, self.size)
        self._label_ids[start : self.size] = ids
        self._live[start : self.size] = True
        self._live_count += len(ids)
        self._max_id = max(self._max_id, int(ids.max()))
        self._changed()

    def remove(self, ids: np.ndarray) -> int:
        """Tombstone every live id in ``ids``: zero its vector and filter it out; returns how many were live."""
        if not len(ids) or int(ids.min()) > self._max_id:
            return 0
        labels = self.labels_of(ids)
        labels = np.unique(labels[labels >= 0])
        if not len(labels):
            return 0
        self._live[labels] = False
        self._storage()[labels] = 0.0
        self._live_count -= len(labels)
        self._changed()
        return len(labels)

    # -- reads ----------------------------------------------------------------------------------------------

    def search(self, queries: np.ndarray, k: int, ef: int, allowed_ids: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, row ids) among live (and allowed) nodes; misses are id -1 with score -inf."""
        if allowed_ids is None:
            bits = self._live_filter()
        else:
            labels = self.labels_of(allowed_ids)
            labels = labels[labels >= 0]
            wanted = np.zeros(self.size, dtype=bool)
            wanted[labels] = True
            bits = np.packbits(wanted, bitorder="little")
            ef = max(ef, min(EF_RESTRICTED_MAX, math.ceil(ef * len(self) / max(len(labels), 1))))
        # ``bits`` must outlive the search: the selector only points at it.
        selector = faiss.IDSelectorBitmap(self.size, faiss.swig_ptr(bits)) if bits is not None else None
        # SearchParametersHNSW is missing from faiss's stub (1.15).
        params = faiss.SearchParametersHNSW(sel=selector, efSearch=ef)  # type: ignore[attr-defined]
        scores, labels = self._index.search(queries, k, params=params)
        found = labels >= 0
        ids = np.full(labels.shape, -1, dtype=np.int64)
        ids[found] = self._label_ids[labels[found]]
        scores[~found] = -np.inf
        return scores, ids

    def sorted_ids(self) -> np.ndarray:
        return self._sorted_live()[0]

    def labels_of(self, ids: np.ndarray) -> np.ndarray:
        """The live label of each id, or -1."""
        known, labels = self._sorted_live()
        if not len(known):
            return np.full(len(ids), -1, dtype=np.int64)
        positions = np.minimum(np.searchsorted(known, ids), len(known) - 1)
        found: np.ndarray = np.where(np.equal(known[positions], ids), labels[positions], -1)
        return found

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        labels = self.labels_of(ids)
        if (labels < 0).any():
            raise KeyError(f"ids not in the graph: {ids[labels < 0][:5].tolist()}")
        rows: np.ndarray = self._storage()[labels].copy()
        return rows

    def live_contents(self) -> tuple[np.ndarray, np.ndarray]:
        """Every live (id, vector), in label order: what a rebuilt graph would hold."""
        labels = np.flatnonzero(self._live[: self.size])
        return self._label_ids[labels].copy(), self._storage()[labels]

    # -- persistence ----------------------------------------------------------------------------------------

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"index": faiss.serialize_index(self._index), "label_ids": self._label_ids[: self.size],
                "live": self._live[: self.size]}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> HnswGraph:
        """Inverse of ``to_arrays``; raises ValueError or RuntimeError on anything else."""
        index = faiss.deserialize_index(arrays["index"])
        if not isinstance(index, faiss.IndexHNSWFlat):
            raise ValueError(f"expected an HNSW graph, found {type(index).__name__}")
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION  # a graph saved by an older version links new nodes alike
        return cls(index, np.asarray(arrays["label_ids"]), np.asarray(arrays["live"]))

    # -- internals ------------------------------------------------------------------------------------------

    def _storage(self) -> np.ndarray:
        """The graph's own vectors, as a writable view (re-taken after each add: the buffer may move)."""
        flat = cast(faiss.IndexFlat, faiss.downcast_index(self._index.storage))  # the stub types it as any Index
        return faiss.rev_swig_ptr(flat.get_xb(), self.size * self.dimension).reshape(self.size, self.dimension)

    def _changed(self) -> None:
        self._sorted = None
        self._live_bits = None

    def _live_filter(self) -> np.ndarray | None:
        if not self.dead:
            return None
        if self._live_bits is None:
            self._live_bits = np.packbits(self._live[: self.size], bitorder="little")
        return self._live_bits

    def _sorted_live(self) -> tuple[np.ndarray, np.ndarray]:
        if self._sorted is None:
            labels = np.flatnonzero(self._live[: self.size])
            ids = self._label_ids[labels]
            order = np.argsort(ids, kind="stable")
            self._sorted = (ids[order], labels[order])
        return self._sorted
