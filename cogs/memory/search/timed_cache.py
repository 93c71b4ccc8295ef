"""TimedCache: values loaded by awaiting a loader, kept a while, with concurrent misses for a key sharing one load.

Used by the first stage (each channel's structure) and PostgreSQL's keyword side (each guild's BM25 stats).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ("TimedCache",)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TimedCache(Generic[K, V]):
    """Each key's value for ``ttl_s`` seconds from when its load began (``ttl_s`` a number, or a callable read on
    every ``get``, so a tuning swapped at run time applies at once). Concurrent ``get``s of a missing or stale key
    await one load: what it raises reaches each of them and nothing is kept (the next ``get`` loads again); a waiter
    cancelled leaves the load running for the others. At most ``max_entries`` values are kept: past that the least
    recently used one is dropped (an LRU bound), expired or not. Lives on one event loop."""

    def __init__(self, ttl_s: float | Callable[[], float], max_entries: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self._ttl_s: Callable[[], float] = ttl_s if callable(ttl_s) else (lambda: ttl_s)
        self._max_entries = max_entries
        self._clock = clock
        self._kept: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._loading: dict[K, asyncio.Task[V]] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def fresh(self, key: K) -> V | None:
        """``key``'s kept value while fresh (marked used, as ``get`` marks it), else None; never loads, never waits.
        A caller after many keys reads them here first and gathers ``get`` only for the rest: each gathered ``get``
        costs a task even when its value is kept."""
        kept = self._fresh_entry(key)
        return None if kept is None else kept[1]

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """``key``'s value: the kept one while fresh, else what ``load()`` (or a load already under way) returns."""
        kept = self._fresh_entry(key)
        if kept is not None:
            return kept[1]
        task = self._loading.get(key)
        if task is None:
            task = asyncio.create_task(self._load(key, load))
            self._loading[key] = task
        # Shielded: a waiter's cancellation reaches the waiter alone, never the load the others await.
        return await asyncio.shield(task)

    def _fresh_entry(self, key: K) -> tuple[float, V] | None:
        kept = self._kept.get(key)
        if kept is None or self._clock() - kept[0] >= self._ttl_s():
            return None
        self._kept.move_to_end(key)
        return kept

    async def _load(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        started = self._clock()
        try:
            value = await load()
        finally:
            del self._loading[key]
        self._kept[key] = (started, value)
        self._kept.move_to_end(key)
        if len(self._kept) > self._max_entries:
            self._kept.popitem(last=False)
        return value
