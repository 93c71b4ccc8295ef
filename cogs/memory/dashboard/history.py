"""The Performance page's history across restarts: the recorder's minutes kept in the database (a small table,
bounded per origin: a day of minutes), read back once memory is open, written every minute and at stop.

The figures are copied on the event loop (a list copy per minute), turned into JSON on a worker thread, and written
by the store's own connection (aiosqlite's thread, asyncpg): nothing here blocks the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from ..metrics import BUCKET_S, DAY_BUCKETS, MetricsRecorder, Minute, minute_figures, minute_from_figures
from .source import DashboardSource

__all__ = ("PerformanceHistory",)

log = logging.getLogger(__name__)


def _encoded(minutes: Sequence[Minute]) -> list[tuple[float, str]]:
    return [(minute.start, minute_figures(minute)) for minute in minutes]


class PerformanceHistory:
    """Reads ``origin``'s minutes back into ``recorder`` (once), then keeps what it records."""

    def __init__(self, source: DashboardSource, recorder: MetricsRecorder, origin: str) -> None:
        self._source, self._recorder, self.origin = source, recorder, origin
        self.loaded = False
        self._kept_from = 0.0  # the newest minute written: written again as it fills
        self._turn = asyncio.Lock()  # the sampler's tick and a stop may overlap: one reads back, once

    async def sync(self) -> int:
        """Read the history back if not done yet, then keep what was recorded since; returns the minutes written."""
        async with self._turn:
            if not self.loaded:
                await self.load()
            return await self.keep()

    async def load(self) -> int:
        """Put the last day's kept minutes before this process's own; raises SourceUnavailable while memory is
        closed (try again later)."""
        since = self._recorder.now() - DAY_BUCKETS * BUCKET_S
        rows = await self._source.performance_minutes(self.origin, since)
        restored = await asyncio.to_thread(lambda: [minute_from_figures(start, figures) for start, figures in rows])
        count = self._recorder.restore(restored)
        self.loaded = True
        self._kept_from = self._recorder.now() // BUCKET_S * BUCKET_S  # what was read back is not written again
        log.debug("Dashboard: %d minutes of Performance history read back (%s)", count, self.origin)
        return count

    async def keep(self) -> int:
        """Write the minutes recorded since the last write (the newest again: it may have grown); returns how many.
        Nothing before ``load`` (it would hide what the database holds)."""
        if not self.loaded:
            return 0
        minutes = self._recorder.minutes_from(self._kept_from)
        if not minutes:
            return 0
        rows = await asyncio.to_thread(_encoded, minutes)
        await self._source.keep_performance_minutes(self.origin, rows, DAY_BUCKETS)
        self._kept_from = minutes[-1].start
        return len(rows)
