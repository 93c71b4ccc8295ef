"""IngestSpool: messages captured while PostgreSQL is away, kept in a small SQLite file beside the data until the
server takes them. A restart during the outage finds them there and stores them, in the order they came."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ..records import MessageRecord
from ..runtime.private_files import create_private_file, make_private_folder
from .report import describe

__all__ = ("SPOOL_NAME", "IngestSpool", "from_json", "to_json")

log = logging.getLogger(__name__)

# Beside the SQLite database path (under the data folder), whichever store memory runs on.
SPOOL_NAME = "postgresql-spool.sqlite3"

CREATE = """
CREATE TABLE IF NOT EXISTS spooled (
    id INTEGER PRIMARY KEY AUTOINCREMENT, message_id INTEGER NOT NULL, record TEXT NOT NULL
)
"""
INSERT = "INSERT INTO spooled (message_id, record) VALUES (?, ?)"
DELETE = "DELETE FROM spooled WHERE id = ?"
SELECT_ALL = "SELECT id, record FROM spooled ORDER BY id"
COUNT = "SELECT COUNT(*) FROM spooled"
_TIMES = ("created_at", "edited_at")


def to_json(record: MessageRecord) -> str:
    fields: dict[str, Any] = dataclasses.asdict(record)
    for name in _TIMES:
        if fields[name] is not None:
            fields[name] = fields[name].isoformat()
    return json.dumps(fields)


def from_json(text: str) -> MessageRecord:
    fields: dict[str, Any] = json.loads(text)
    for name in _TIMES:
        if fields[name] is not None:
            fields[name] = datetime.fromisoformat(fields[name])
    fields["attachments"] = tuple(fields["attachments"])
    return MessageRecord(**fields)


class IngestSpool:
    """One SQLite file, one connection, used from worker threads one call at a time: the message writer's, or the
    bot's while memory cannot open for want of its database."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = asyncio.Lock()
        self._failing = False  # the last ``keep`` failed: logged once, until one works again

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            make_private_folder(self.path.parent)
            if not self.path.exists():
                create_private_file(self.path)  # 0600, and SQLite's -wal and -shm after it: it holds messages
            conn = sqlite3.connect(self.path, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")  # a spooled message is acknowledged: it survives a power cut
            conn.execute(CREATE)
            self._conn = conn
        return self._conn

    def _add(self, records: Sequence[MessageRecord]) -> list[int]:
        conn = self._connection()
        with conn:
            return [conn.execute(INSERT, (record.message_id, to_json(record))).lastrowid or 0 for record in records]

    def _keep(self, records: Sequence[MessageRecord], done: Sequence[int]) -> list[int]:
        conn = self._connection()
        with conn:
            ids = [conn.execute(INSERT, (record.message_id, to_json(record))).lastrowid or 0 for record in records]
            conn.executemany(DELETE, [(spool_id,) for spool_id in done])
        return ids

    def _remove(self, ids: Sequence[int]) -> None:
        conn = self._connection()
        with conn:
            conn.executemany(DELETE, [(spool_id,) for spool_id in ids])

    def _read(self) -> list[tuple[int, MessageRecord]]:
        if self._conn is None and not self.path.exists():
            return []
        return [(spool_id, from_json(text)) for spool_id, text in self._connection().execute(SELECT_ALL)]

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def add(self, records: Sequence[MessageRecord]) -> list[int]:
        """Keep ``records`` (committed to disk before this returns); their spool ids, in order."""
        async with self._lock:
            return await asyncio.to_thread(self._add, records)

    async def keep(self, records: Sequence[MessageRecord], done: Sequence[int] = ()) -> list[int] | None:
        """Keep ``records`` and forget ``done`` (spool ids of messages stored since) in one transaction, on disk
        before this returns: the new spool ids, in order. None when the disk refused (logged once, until a ``keep``
        works again): the caller holds them in memory meanwhile and asks again."""
        try:
            async with self._lock:
                ids = await asyncio.to_thread(self._keep, records, done)
        except (sqlite3.Error, OSError) as error:
            log.log(logging.DEBUG if self._failing else logging.ERROR, "Keeping %d messages in %s failed (%s); they "
                    "stay in memory until stored", len(records), self.path, describe(error))
            self._failing = True
            return None
        if self._failing:
            log.info("Keeping messages in %s works again", self.path)
        self._failing = False
        return ids

    async def remove(self, ids: Sequence[int]) -> None:
        """Forget what the database now holds (or dropped on purpose)."""
        if ids:
            async with self._lock:
                await asyncio.to_thread(self._remove, ids)

    async def replay(self) -> list[tuple[int, MessageRecord]]:
        """``read`` as the writer starts, logged: how many an earlier run kept, or (none returned) why the file cannot
        be read; it is then left where it is, for an admin to look at."""
        try:
            kept = await self.read()
        except (sqlite3.Error, OSError, ValueError) as error:
            log.error("Reading the messages kept in %s failed (%s); they are not stored", self.path, describe(error))
            return []
        if kept:
            log.info("%d messages kept in %s while the database was away are stored now", len(kept), self.path)
        return kept

    async def read(self) -> list[tuple[int, MessageRecord]]:
        """Everything kept, oldest first."""
        async with self._lock:
            return await asyncio.to_thread(self._read)

    async def close(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self._close)
