"""The ``HistoryLedger`` in PostgreSQL: the same stored spans and saved progress as ``history.SqliteHistory``,
shared by every process on the database (each upsert is one statement)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..history import (BACKFILL_COLUMNS, BACKFILL_UPDATE, CATCHUP_COLUMNS, CATCHUP_UPDATE, EXCLUSION_COLUMNS,
                       PROGRESS_TABLES, BackfillProgress, CatchUpProgress, Exclusion, StoredMessage)
from ..rows import to_timestamp

if TYPE_CHECKING:
    from .store import PostgresStore

__all__ = ("PostgresHistory",)

SELECT_RECENT = """
SELECT message_id, content, created_at, edited_at FROM messages
WHERE guild_id = $1 AND channel_id = $2 AND created_at < $3
ORDER BY created_at DESC, message_id DESC LIMIT $4
"""
# A page after the (created_at, message_id) it ended on; the first bound keeps the index range narrow.
SELECT_RECENT_BEFORE_ROW = """
SELECT message_id, content, created_at, edited_at FROM messages
WHERE guild_id = $1 AND channel_id = $2 AND created_at <= $3 AND (created_at < $3 OR message_id < $4)
ORDER BY created_at DESC, message_id DESC LIMIT $5
"""
SELECT_BETWEEN = """
SELECT message_id, content, created_at, edited_at FROM messages
WHERE guild_id = $1 AND channel_id = $2 AND created_at >= $3 AND created_at <= $4
ORDER BY created_at, message_id
"""
SELECT_NEWEST_IN_GUILD = """
SELECT message_id FROM messages WHERE guild_id = $1 AND created_at < $2
ORDER BY created_at DESC, message_id DESC LIMIT 1
"""
SELECT_NEWEST_IN_CHANNEL = """
SELECT message_id FROM messages WHERE guild_id = $1 AND channel_id = $2
ORDER BY created_at DESC, message_id DESC LIMIT 1
"""
SELECT_CATCHUP = f"SELECT {CATCHUP_COLUMNS} FROM catchup_progress WHERE channel_id = $1"
UPSERT_CATCHUP = f"""
INSERT INTO catchup_progress ({CATCHUP_COLUMNS}, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
{CATCHUP_UPDATE}
"""
SELECT_BACKFILL = f"SELECT {BACKFILL_COLUMNS} FROM backfill_progress WHERE channel_id = $1"
UPSERT_BACKFILL = f"""
INSERT INTO backfill_progress ({BACKFILL_COLUMNS}, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
{BACKFILL_UPDATE}
"""
DELETE_PROGRESS_OF_CHANNEL = "DELETE FROM {table} WHERE guild_id = $1 AND (channel_id = $2 OR parent_channel_id = $2)"
DELETE_PROGRESS_OF_GUILD = "DELETE FROM {table} WHERE guild_id = $1"
SELECT_EXCLUSIONS = f"""
SELECT {EXCLUSION_COLUMNS} FROM history_exclusions
WHERE (guild_id = $1 OR guild_id IS NULL) AND (channel_id IS NULL OR channel_id = $2 OR channel_id = $3)
"""
DELETE_SAME_EXCLUSION = """
DELETE FROM history_exclusions
WHERE guild_id IS NOT DISTINCT FROM $1 AND channel_id IS NOT DISTINCT FROM $2 AND author_id IS NOT DISTINCT FROM $3
    AND message_id IS NOT DISTINCT FROM $4 AND since = $5
"""
INSERT_EXCLUSION = f"INSERT INTO history_exclusions ({EXCLUSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"
END_OPEN_EXCLUSIONS = """
UPDATE history_exclusions SET until = $1
WHERE guild_id = $2 AND channel_id = $3 AND author_id IS NULL AND message_id IS NULL AND until IS NULL
"""


class PostgresHistory:
    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def _first(self, sql: str, *params: Any) -> Any:
        rows = await self._store.fetch(sql, *params)
        return rows[0] if rows else None

    async def _execute(self, sql: str, *params: Any) -> None:
        async with self._store.acquire() as conn:
            await conn.execute(sql, *params)

    async def recent_messages(self, guild_id: int, channel_id: int, before: datetime, count: int,
                              before_id: int | None = None) -> list[StoredMessage]:
        if before_id is None:
            rows = await self._store.fetch(SELECT_RECENT, guild_id, channel_id, to_timestamp(before), count)
        else:
            rows = await self._store.fetch(SELECT_RECENT_BEFORE_ROW, guild_id, channel_id, to_timestamp(before),
                                           before_id, count)
        return [StoredMessage(*row) for row in rows]

    async def messages_between(self, guild_id: int, channel_id: int, after: datetime,
                               until: datetime) -> list[StoredMessage]:
        rows = await self._store.fetch(SELECT_BETWEEN, guild_id, channel_id, to_timestamp(after),
                                       to_timestamp(until))
        return [StoredMessage(*row) for row in rows]

    async def newest_message_id(self, guild_id: int, before: datetime) -> int | None:
        row = await self._first(SELECT_NEWEST_IN_GUILD, guild_id, to_timestamp(before))
        return row[0] if row else None

    async def newest_in_channel(self, guild_id: int, channel_id: int) -> int | None:
        row = await self._first(SELECT_NEWEST_IN_CHANNEL, guild_id, channel_id)
        return row[0] if row else None

    async def catchup_progress(self, channel_id: int) -> CatchUpProgress | None:
        row = await self._first(SELECT_CATCHUP, channel_id)
        return CatchUpProgress(*row) if row else None

    async def save_catchup(self, progress: CatchUpProgress) -> None:
        p = progress
        await self._execute(UPSERT_CATCHUP, p.channel_id, p.guild_id, p.parent_channel_id, p.position, p.anchor,
                            p.read, p.added, p.edited, p.deleted, p.finished, time.time())

    async def backfill_progress(self, channel_id: int) -> BackfillProgress | None:
        row = await self._first(SELECT_BACKFILL, channel_id)
        return BackfillProgress(*row) if row else None

    async def save_backfill(self, progress: BackfillProgress) -> None:
        p = progress
        await self._execute(UPSERT_BACKFILL, p.channel_id, p.guild_id, p.parent_channel_id, p.oldest_id, p.newest_id,
                            p.reached_start, time.time())

    async def forget(self, guild_id: int, channel_id: int | None = None) -> None:
        for table in PROGRESS_TABLES:
            if channel_id is None:
                await self._execute(DELETE_PROGRESS_OF_GUILD.format(table=table), guild_id)
            else:
                await self._execute(DELETE_PROGRESS_OF_CHANNEL.format(table=table), guild_id, channel_id)

    async def exclusions(self, guild_id: int, channel_id: int, parent_id: int | None) -> list[Exclusion]:
        rows = await self._store.fetch(SELECT_EXCLUSIONS, guild_id, channel_id, parent_id)
        return [Exclusion(*row) for row in rows]

    async def exclude(self, exclusion: Exclusion) -> None:
        e = exclusion
        async with self._store.acquire() as conn, conn.transaction():
            await conn.execute(DELETE_SAME_EXCLUSION, e.guild_id, e.channel_id, e.author_id, e.message_id, e.since)
            await conn.execute(INSERT_EXCLUSION, e.guild_id, e.channel_id, e.author_id, e.message_id, e.since, e.until)

    async def end_exclusions(self, guild_id: int, channel_id: int, until: float) -> None:
        await self._execute(END_OPEN_EXCLUSIONS, until, guild_id, channel_id)
