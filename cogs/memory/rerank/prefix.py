"""The constant part of a reranker prompt (system prompt + instruction), its KV cache kept across queries."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# One entry per instruction in use; the bot uses one or two. An entry of Qwen3-Reranker-0.6B in fp32 is about
# 230 KB per token (28 layers x 2 x 8 heads x 128 x 4 bytes), ~15 MB for the ~65 constant tokens.
DEFAULT_CAPACITY = 4


@dataclass(frozen=True, slots=True)
class ConstantPrefix:
    """The tokens every prompt with this instruction starts with, and the model's KV cache for them."""

    ids: tuple[int, ...]
    kv: Any


class ConstantPrefixCache:
    """LRU of ConstantPrefix by instruction; owned by one scorer (and so by one thread)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self.hits = self.misses = 0
        self._entries: OrderedDict[str, ConstantPrefix] = OrderedDict()

    def get(self, instruction: str, ids: list[int], compute: Callable[[list[int]], Any]) -> ConstantPrefix:
        """The entry for `instruction`, computing its KV with `compute(ids)` the first time."""
        entry = self._entries.get(instruction)
        if entry is not None and list(entry.ids) == ids:
            self.hits += 1
            self._entries.move_to_end(instruction)
            return entry
        self.misses += 1
        entry = ConstantPrefix(tuple(ids), compute(ids))
        self._entries[instruction] = entry
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)
        return entry

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
