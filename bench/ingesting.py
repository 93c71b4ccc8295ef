"""Handing a benchmark's messages to ingest while stderr shows how many are stored, not how many are handed over."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol

from cogs.memory.records import MessageRecord
from cogs.memory.runtime.progress import TerminalProgress, follow

__all__ = ("Ingests", "ingest_showing_progress")


class Ingests(Protocol):
    """What takes the messages: ``Memory`` or an ``IngestQueue``."""

    @property
    def queued(self) -> int: ...

    async def add(self, record: MessageRecord) -> None: ...

    async def flush(self, *, vectors: bool = False) -> object: ...


async def ingest_showing_progress(records: Sequence[MessageRecord], ingest: Ingests) -> None:
    """Add every record and flush with vectors. On stderr, so stdout's JSON is untouched, the count of what is stored
    with its vector (handed over and no longer queued): the queue takes messages far faster than they are written."""
    progress = TerminalProgress(f"ingest {len(records)} messages", len(records), sys.stderr)
    handed = 0

    async def hand_over() -> None:
        nonlocal handed
        for record in records:
            await ingest.add(record)
            handed += 1
        await ingest.flush(vectors=True)

    await follow(progress, hand_over(), lambda: max(handed - ingest.queued, 0))
    progress.close()
