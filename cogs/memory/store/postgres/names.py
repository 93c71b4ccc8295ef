"""Guilds' and channels' names as memory last saw them (``place_names``), kept in PostgreSQL: the same rows and
calls as the SQLite side (sqlite/names.py), in PostgreSQL's dialect. The last process to see a rename wins."""

from __future__ import annotations

from collections.abc import Sequence

from ..rows import PlaceName
from .faults import GuardedPool

__all__ = ("PlaceNamesMixin",)

PLACE_COLUMNS = "guild_id, kind, id, name, parent_id, seen_at"
SELECT_PLACE_NAMES = f"SELECT {PLACE_COLUMNS} FROM place_names ORDER BY guild_id, kind DESC, id"
UPSERT_PLACE_NAME = f"""
INSERT INTO place_names ({PLACE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (guild_id, kind, id) DO UPDATE SET name = excluded.name, parent_id = excluded.parent_id,
                                               seen_at = excluded.seen_at
"""
DELETE_CHANNEL_NAMES = """
DELETE FROM place_names WHERE guild_id = $1 AND kind = 'channel' AND (id = $2 OR parent_id = $2)
"""
DELETE_GUILD_NAMES = "DELETE FROM place_names WHERE guild_id = $1"


class PlaceNamesMixin:
    """PostgresStore's names."""

    _pool: GuardedPool
    _forgotten: bool

    async def place_names(self) -> list[PlaceName]:
        """Every name memory holds, guilds first within each guild."""
        return [PlaceName(*row) for row in await self._pool.fetch(SELECT_PLACE_NAMES)]

    async def write_place_names(self, names: Sequence[PlaceName]) -> None:
        """Record ``names`` (new or renamed places) in one transaction."""
        if not names:
            return
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.executemany(UPSERT_PLACE_NAME, [(n.guild_id, n.kind, n.place_id, n.name, n.parent_id,
                                                        n.seen_at) for n in names])

    async def forget_place_names(self, guild_id: int, channel_id: int | None = None) -> int:
        """Forget a channel's name and its threads' (or, with no channel, every name of the guild); the next
        ``erase_forgotten`` vacuums the table."""
        if channel_id is None:
            status = await self._pool.execute(DELETE_GUILD_NAMES, guild_id)
        else:
            status = await self._pool.execute(DELETE_CHANNEL_NAMES, guild_id, channel_id)
        removed = int(status.split()[-1])
        if removed:
            self._forgotten = True
        return removed
