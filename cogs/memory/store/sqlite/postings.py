"""How many messages hold a keyword term, as the FTS5 side's query planning reads it (``_keyword_query``: which terms
decide, which only rank, which name an author), kept a minute.

A count is read by a statement per term, up to a cap: about 1 ms of a search's 8 ms keyword side at 100k messages
(docs/scale.md, issue 32). The questions of a server name the same people and things again and again, and what a
count decides moves only when hundreds of messages come or go; a minute-old count ranks as well as a fresh one.
Kept per search engine, shared by the store's reader threads (a lock guards it), and bounded.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ("PostingCounts",)


class PostingCounts:
    """Counts of the messages a term's MATCH string finds (each counted up to its cap), each kept ``keep_s`` seconds;
    past ``max_entries`` the least recently used goes."""

    def __init__(self, keep_s: float = 60.0, max_entries: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._keep_s = keep_s
        self._max_entries = max_entries
        self._clock = clock
        self._counts: OrderedDict[tuple[str, int], tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, match: str, cap: int, read: Callable[[], int]) -> int:
        """The count of ``match`` (up to ``cap``): the one kept, or ``read()``'s, kept from now on."""
        key = (match, cap)
        now = self._clock()
        with self._lock:
            kept = self._counts.get(key)
            if kept is not None and now < kept[1]:
                self._counts.move_to_end(key)
                return kept[0]
        counted = read()
        with self._lock:
            self._counts[key] = (counted, now + self._keep_s)
            self._counts.move_to_end(key)
            while len(self._counts) > self._max_entries:
                self._counts.popitem(last=False)
        return counted

    def clear(self) -> None:
        """Forget every count (the next search reads each again)."""
        with self._lock:
            self._counts.clear()

    def __len__(self) -> int:
        return len(self._counts)
