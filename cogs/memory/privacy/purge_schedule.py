"""PurgeScheduler: when forgotten messages are erased from the bytes of the store's files, for either store.

A forget commits at once; erasing what it leaves readable on disk (store/sqlite/purge.py rewrites the FTS5 index and
truncates the WAL; PostgreSQL vacuums) is batched: soon after a stream of forgets pauses, never long after the first,
and never so often that purging takes more than a tenth of the writer's time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

__all__ = ("PURGE_DELAY_S", "PURGE_MAX_DELAY_S", "PurgeScheduler")

log = logging.getLogger(__name__)

# A purge runs this long after the last forget, so a stream of single deletes costs one purge...
PURGE_DELAY_S = 5.0
# ...but never later than this after the first forget it covers...
PURGE_MAX_DELAY_S = 30.0
# ...nor sooner than this many times the previous purge's duration after it ended. Rewriting the FTS5 index takes
# ~0.5 s at 100k messages on the 2-core dev box (so ~5 s at 1M) while ingest waits: this keeps background purges
# to at most a tenth of the writer's time, however fast forgets arrive.
PURGE_SPACING = 9.0


class PurgeScheduler:
    """Runs ``purge`` soon after forgets: debounced in the background, or at once through ``now``.

    ``purge`` returns False when it could not finish; it is then tried again after ``delay``.
    """

    def __init__(self, purge: Callable[[], Awaitable[bool]], *, delay: float = PURGE_DELAY_S,
                 max_delay: float = PURGE_MAX_DELAY_S) -> None:
        self._purge = purge
        self.delay = delay
        self.max_delay = max_delay
        self._first: float | None = None  # loop time of the earliest forget no purge has covered yet
        self._last = 0.0
        self._not_before = 0.0
        self._task: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()

    def soon(self) -> None:
        """A forget has committed: purge once forgets pause for ``delay`` (``max_delay`` at the latest)."""
        if self._closing.is_set():
            return
        now = asyncio.get_running_loop().time()
        self._last = now
        if self._first is None:
            self._first = now
        self._idle.clear()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run_when_due(), name="memory-purge")

    async def now(self) -> bool:
        """Purge at once (after a purge already under way); True when everything forgotten is erased."""
        self._first = None
        return await self._run()

    async def wait_idle(self) -> None:
        """Return once no purge is scheduled or running."""
        await self._idle.wait()

    async def close(self) -> None:
        """Stop scheduling; a purge under way finishes first (the owner purges once more as it closes)."""
        self._closing.set()
        if self._task is not None:
            await self._task

    async def _run_when_due(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while self._first is not None and not self._closing.is_set():
                due = max(min(self._last + self.delay, self._first + self.max_delay), self._not_before)
                if loop.time() < due:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._closing.wait(), due - loop.time())
                    continue  # forgets meanwhile may have moved the due time
                self._first = None
                await self._run()
        finally:
            self._idle.set()

    async def _run(self) -> bool:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            done = await self._purge()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Erasing forgotten messages from disk failed; trying again in %.0f s", self.delay)
            done = False
        ended = loop.time()
        self._not_before = ended + (ended - started) * PURGE_SPACING
        if not done:
            self.soon()
        return done
