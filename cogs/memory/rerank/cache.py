"""The reranker's score cache: an LRU of scores keyed by (model, instruction, query, document)."""

from __future__ import annotations

from collections import OrderedDict

CacheKey = tuple[str, str, str, str]


class ScoreCache:
    """LRU of scores keyed by (model, instruction, query, document); owned by the reranker's worker thread."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = self.misses = 0
        self._entries: OrderedDict[CacheKey, float] = OrderedDict()

    def get(self, key: CacheKey) -> float | None:
        value = self._entries.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return value

    def put(self, key: CacheKey, value: float) -> None:
        if self.capacity <= 0:
            return
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
