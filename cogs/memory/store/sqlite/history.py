"""What memory needs to read a channel's history again: the messages it holds in a span of the channel, and how far
the catch-up after a gateway session and ``/memory backfill`` have read each channel (saved, so a restart goes on).

``HistoryLedger`` (store/history.py) is what the cog uses; ``SqliteHistory`` keeps it in the SQLite file.
Message ids are plain integers here; that they grow with time (Discord's snowflakes) is the cog's knowledge.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..history import (BACKFILL_COLUMNS, BACKFILL_UPDATE, CATCHUP_COLUMNS, CATCHUP_UPDATE, EXCLUSION_COLUMNS,
                       PROGRESS_TABLES, BackfillProgress, CatchUpProgress, Exclusion, HistoryLedger, StoredMessage)
from ..rows import to_timestamp

if TYPE_CHECKING:
    from .store import SqliteStore

__all__ = ("SqliteHistory",)

# The newest first: the span a catch-up checks for edits and deletes ends at the newest stored message.
SELECT_RECENT = """
SELECT message_id, content, created_at, edited_at FROM messages
WHERE guild_id = ? AND channel_id = ? AND created_at < ?
ORDER BY created_at DESC, message_id DESC LIMIT ?
"""
# A page after the (created_at, message_id) it ended on; the first bound keeps the index range narrow.
SELECT_RECENT_BEFORE_ROW = """
SELECT message_id, content, created_at, edited_at FROM messages
WHERE guild_id = ? AND channel_id = ? AND created_at <= ? AND (created_at < ? OR message_id < ?)
ORDER BY created_at DESC, message_id DESC LIMIT ?
"""
SELECT_BETWEEN = """
SELECT message_id, content, created_at, edited_at FROM messages
WHERE guild_id = ? AND channel_id = ? AND created_at >= ? AND created_at <= ?
ORDER BY created_at, message_id
"""
SELECT_NEWEST_IN_GUILD = """
SELECT message_id FROM messages WHERE guild_id = ? AND created_at < ?
ORDER BY created_at DESC, message_id DESC LIMIT 1
"""
SELECT_NEWEST_IN_CHANNEL = """
SELECT message_id FROM messages WHERE guild_id = ? AND channel_id = ?
ORDER BY created_at DESC, message_id DESC LIMIT 1
"""
SELECT_CATCHUP = f"SELECT {CATCHUP_COLUMNS} FROM catchup_progress WHERE channel_id = ?"
UPSERT_CATCHUP = f"""
INSERT INTO catchup_progress ({CATCHUP_COLUMNS}, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
{CATCHUP_UPDATE}
"""
SELECT_BACKFILL = f"SELECT {BACKFILL_COLUMNS} FROM backfill_progress WHERE channel_id = ?"
UPSERT_BACKFILL = f"""
INSERT INTO backfill_progress ({BACKFILL_COLUMNS}, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
{BACKFILL_UPDATE}
"""
# A channel and its threads, or a whole guild: what was read of them no longer matches what memory holds.
DELETE_PROGRESS_OF_CHANNEL = """
DELETE FROM {table} WHERE guild_id = ? AND (channel_id = ? OR parent_channel_id = ?)
"""
DELETE_PROGRESS_OF_GUILD = "DELETE FROM {table} WHERE guild_id = ?"
# Those that can cover a message of the channel (or of a thread of ``parent``), in the guild or in every guild.
SELECT_EXCLUSIONS = f"""
SELECT {EXCLUSION_COLUMNS} FROM history_exclusions
WHERE (guild_id = ? OR guild_id IS NULL) AND (channel_id IS NULL OR channel_id = ? OR channel_id = ?)
"""
# One row per kind of exclusion and start: a newer one replaces the older (it covers at least as much).
DELETE_SAME_EXCLUSION = """
DELETE FROM history_exclusions WHERE guild_id IS ? AND channel_id IS ? AND author_id IS ? AND message_id IS ?
    AND since = ?
"""
INSERT_EXCLUSION = f"INSERT INTO history_exclusions ({EXCLUSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)"
END_OPEN_EXCLUSIONS = """
UPDATE history_exclusions SET until = ?
WHERE guild_id = ? AND channel_id = ? AND author_id IS NULL AND message_id IS NULL AND until IS NULL
"""


def _stored(rows: list[tuple[Any, ...]]) -> list[StoredMessage]:
    return [StoredMessage(*row) for row in rows]


def _recent(connection: sqlite3.Connection, guild_id: int, channel_id: int, before: float,
            count: int) -> list[StoredMessage]:
    return _stored(connection.execute(SELECT_RECENT, (guild_id, channel_id, before, count)).fetchall())


def _between(connection: sqlite3.Connection, guild_id: int, channel_id: int, after: float,
             until: float) -> list[StoredMessage]:
    return _stored(connection.execute(SELECT_BETWEEN, (guild_id, channel_id, after, until)).fetchall())


def _all(connection: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return connection.execute(sql, params).fetchall()


def _one(connection: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
    row: tuple[Any, ...] | None = connection.execute(sql, params).fetchone()
    return row


class SqliteHistory:
    """The ``HistoryLedger`` in the SQLite file: reads through the store's reader connections (never behind an
    ingest write); saves through its writer, between ingest writes (``write_lock``)."""

    def __init__(self, store: SqliteStore, write_lock: asyncio.Lock) -> None:
        self._store = store
        self._write_lock = write_lock

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        async with self._write_lock:
            await self._store.execute(sql, params)

    # -- what memory holds ------------------------------------------------------------------------------------

    async def recent_messages(self, guild_id: int, channel_id: int, before: datetime, count: int,
                              before_id: int | None = None) -> list[StoredMessage]:
        """The channel's ``count`` newest stored messages created before ``before`` (or at it, with an id below
        ``before_id``), newest first."""
        if before_id is None:
            return await self._store.read(_recent, guild_id, channel_id, to_timestamp(before), count)
        at = to_timestamp(before)
        rows = await self._store.read(_all, SELECT_RECENT_BEFORE_ROW, (guild_id, channel_id, at, at, before_id, count))
        return _stored(rows)

    async def messages_between(self, guild_id: int, channel_id: int, after: datetime,
                               until: datetime) -> list[StoredMessage]:
        """The channel's stored messages created from ``after`` to ``until`` (both included), oldest first."""
        return await self._store.read(_between, guild_id, channel_id, to_timestamp(after), to_timestamp(until))

    async def newest_message_id(self, guild_id: int, before: datetime) -> int | None:
        """The id of the guild's newest stored message created before ``before``, if any."""
        row = await self._store.read(_one, SELECT_NEWEST_IN_GUILD, (guild_id, to_timestamp(before)))
        return row[0] if row else None

    async def newest_in_channel(self, guild_id: int, channel_id: int) -> int | None:
        """The id of the channel's newest stored message, if any."""
        row = await self._store.read(_one, SELECT_NEWEST_IN_CHANNEL, (guild_id, channel_id))
        return row[0] if row else None

    # -- catch-up progress ------------------------------------------------------------------------------------

    async def catchup_progress(self, channel_id: int) -> CatchUpProgress | None:
        row = await self._store.read(_one, SELECT_CATCHUP, (channel_id,))
        # The row holds every field in order; SQLite's 0 or 1 becomes a bool.
        return dataclasses.replace(CatchUpProgress(*row), finished=bool(row[-1])) if row else None

    async def save_catchup(self, progress: CatchUpProgress) -> None:
        p = progress
        await self._execute(UPSERT_CATCHUP, (
            p.channel_id, p.guild_id, p.parent_channel_id, p.position, p.anchor, p.read, p.added, p.edited,
            p.deleted, int(p.finished), time.time()))

    # -- backfill progress ------------------------------------------------------------------------------------

    async def backfill_progress(self, channel_id: int) -> BackfillProgress | None:
        row = await self._store.read(_one, SELECT_BACKFILL, (channel_id,))
        return dataclasses.replace(BackfillProgress(*row), reached_start=bool(row[-1])) if row else None

    async def save_backfill(self, progress: BackfillProgress) -> None:
        p = progress
        await self._execute(UPSERT_BACKFILL, (
            p.channel_id, p.guild_id, p.parent_channel_id, p.oldest_id, p.newest_id, int(p.reached_start),
            time.time()))

    # -- forgetting, and what history must not bring back ----------------------------------------------------

    async def exclusions(self, guild_id: int, channel_id: int, parent_id: int | None) -> list[Exclusion]:
        rows = await self._store.read(_all, SELECT_EXCLUSIONS, (guild_id, channel_id, parent_id))
        return [Exclusion(*row) for row in rows]

    async def exclude(self, exclusion: Exclusion) -> None:
        e = exclusion
        await self._execute(DELETE_SAME_EXCLUSION, (e.guild_id, e.channel_id, e.author_id, e.message_id, e.since))
        await self._execute(INSERT_EXCLUSION, (e.guild_id, e.channel_id, e.author_id, e.message_id, e.since, e.until))

    async def end_exclusions(self, guild_id: int, channel_id: int, until: float) -> None:
        await self._execute(END_OPEN_EXCLUSIONS, (until, guild_id, channel_id))

    async def forget(self, guild_id: int, channel_id: int | None = None) -> None:
        """Drop the progress of a channel and its threads (or a whole guild): its memory was forgotten, so a
        backfill reads it all again instead of skipping what it once read."""
        for table in PROGRESS_TABLES:
            if channel_id is None:
                await self._execute(DELETE_PROGRESS_OF_GUILD.format(table=table), (guild_id,))
            else:
                await self._execute(DELETE_PROGRESS_OF_CHANNEL.format(table=table),
                                          (guild_id, channel_id, channel_id))
