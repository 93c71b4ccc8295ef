"""The quotation log: where each member's messages were shown to someone else (a public answer, an automatic recall,
an LLM answer given them, a private search), by ids and times, never text and never who asked.

Noting is a list append on the recall path; a background task writes the notes in batches between ingest writes, so
a recall never waits for the database (bench/quotations.py measures it). An entry goes with the message it notes
(the stores' ON DELETE CASCADE): every forget takes it, and so does the erasure ledger's forget done again after a
restore. A guild's ``quotation_log`` setting turns it off; ``quotation_retention_days`` bounds how long entries stay.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Protocol

from ..guild_policy import GuildSettings
from ..records import Hit
from ..store.member_rows import Quotation, QuotationKind

__all__ = ("FLUSH_INTERVAL_S", "QuotationLog", "QuotationStore")

log = logging.getLogger(__name__)

# Notes wait at most this long, or until this many are waiting, before they are written.
FLUSH_INTERVAL_S = 2.0
FLUSH_BATCH = 512


class QuotationStore(Protocol):
    """What the log needs of the store (store.protocol.MemberRecords' quotation part)."""

    async def record_quotations(self, quotations: Sequence[Quotation]) -> int: ...
    async def prune_quotations(self, guild_id: int, before: float) -> int: ...
    async def guild_ids(self) -> list[int]: ...


class QuotationLog:
    """Notes quotations now, writes them soon (``start``/``close``: the background writer), prunes them by age."""

    def __init__(self, store: QuotationStore, write_lock: asyncio.Lock,
                 settings: Callable[[int], Awaitable[GuildSettings]], *,
                 interval_s: float = FLUSH_INTERVAL_S) -> None:
        self._store = store
        self._write_lock = write_lock  # the SQLite writer's connection is shared with ingest
        self._settings = settings
        self._interval_s = interval_s
        self._waiting: list[Quotation] = []
        self._due = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def note(self, hits: Iterable[Hit], kind: QuotationKind, shown_to: int | None, *,
             answer_channel_id: int | None = None, answer_message_id: int | None = None) -> int:
        """Note that ``hits`` were shown (``kind``) to the member ``shown_to`` (None: to no one member in particular):
        a member's own messages shown to themselves are not quotations. Never waits; returns how many were noted."""
        now = time.time()
        quotes = [Quotation(hit.guild_id, hit.author_id, hit.message_id, hit.channel_id, now, kind, answer_channel_id,
                            answer_message_id) for hit in hits if hit.author_id != shown_to]
        self._waiting.extend(quotes)
        if len(self._waiting) >= FLUSH_BATCH:
            self._due.set()
        return len(quotes)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="quotation-log")

    async def close(self) -> None:
        """Stop the writer and write what waits."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()

    async def flush(self) -> int:
        """Write what waits now, except the notes of guilds whose log is off; returns how many were noted."""
        waiting, self._waiting = self._waiting, []
        self._due.clear()
        kept = []
        for quote in waiting:
            if (await self._settings(quote.guild_id)).quotation_log:
                kept.append(quote)
        if not kept:
            return 0
        try:
            async with self._write_lock:
                return await self._store.record_quotations(kept)
        except BaseException:
            self._waiting[:0] = kept  # tried again at the next flush
            raise

    async def prune(self, now: float | None = None) -> int:
        """Drop every guild's entries older than its ``quotation_retention_days``; returns how many went."""
        now = time.time() if now is None else now
        pruned = 0
        for guild_id in await self._store.guild_ids():
            days = (await self._settings(guild_id)).quotation_retention_days
            async with self._write_lock:
                pruned += await self._store.prune_quotations(guild_id, now - days * 86400.0)
        return pruned

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._due.wait(), self._interval_s)
            try:
                await self.flush()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Writing %d quotation notes failed; trying again in %.0f s", len(self._waiting),
                              self._interval_s)
