"""Guilds' and channels' names as memory last saw them (``place_names``), kept in SQLite: written in batches, read
whole (a few rows a channel), and forgotten with the channel or guild they name."""

from __future__ import annotations

import time
from collections.abc import Sequence

import aiosqlite

from . import purge
from ..rows import PlaceName

__all__ = ("PlaceNamesMixin",)

PLACE_COLUMNS = "guild_id, kind, id, name, parent_id, seen_at"
SELECT_PLACE_NAMES = f"SELECT {PLACE_COLUMNS} FROM place_names ORDER BY guild_id, kind DESC, id"
UPSERT_PLACE_NAME = f"""
INSERT INTO place_names ({PLACE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (guild_id, kind, id) DO UPDATE SET name = excluded.name, parent_id = excluded.parent_id,
                                               seen_at = excluded.seen_at
"""
# A channel and its threads (a thread's parent is a channel of the same guild).
DELETE_CHANNEL_NAMES = """
DELETE FROM place_names WHERE guild_id = ? AND kind = 'channel' AND (id = ? OR parent_id = ?)
"""
DELETE_GUILD_NAMES = "DELETE FROM place_names WHERE guild_id = ?"


class PlaceNamesMixin:
    """SqliteStore's names: writes on the writer's connection (call them between ingest writes)."""

    _conn: aiosqlite.Connection

    async def place_names(self) -> list[PlaceName]:
        """Every name memory holds, guilds first within each guild."""
        return [PlaceName(*row) for row in await self._conn.execute_fetchall(SELECT_PLACE_NAMES)]

    async def write_place_names(self, names: Sequence[PlaceName]) -> None:
        """Record ``names`` (new or renamed places) in one transaction."""
        if not names:
            return
        await self._transaction(UPSERT_PLACE_NAME, [(n.guild_id, n.kind, n.place_id, n.name, n.parent_id, n.seen_at)
                                                    for n in names])

    async def forget_place_names(self, guild_id: int, channel_id: int | None = None) -> int:
        """Forget a channel's name and its threads' (or, with no channel, every name of the guild); the forget marks
        a purge pending in the same transaction, so the old name leaves the WAL too."""
        if channel_id is None:
            return await self._transaction(DELETE_GUILD_NAMES, [(guild_id,)], forgets=True)
        return await self._transaction(DELETE_CHANNEL_NAMES, [(guild_id, channel_id, channel_id)], forgets=True)

    async def _transaction(self, sql: str, params: list[tuple[object, ...]], *, forgets: bool = False) -> int:
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            before = self._conn.total_changes
            await self._conn.executemany(sql, params)
            changed = self._conn.total_changes - before
            if forgets and changed:
                await self._conn.execute(purge.MARK_PURGE_PENDING, (time.time(),))
        except BaseException:
            await self._conn.rollback()
            raise
        await self._conn.commit()
        return changed
