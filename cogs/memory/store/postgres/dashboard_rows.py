"""What the dashboard asks of PostgreSQL beyond messages: the same rows and calls as the SQLite side
(sqlite/dashboard_rows.py), in PostgreSQL's dialect."""

from __future__ import annotations

from collections.abc import Sequence

from ..rows import AuthorSeen, PerformanceMinute
from .faults import GuardedPool

__all__ = ("DashboardRowsMixin",)

# Names in code-point order (the "C" collation), as SQLite's BINARY orders them, whatever the database's collation.
SELECT_AUTHOR_NAMES = """
SELECT author_id, author_name, COUNT(*) AS messages, MAX(created_at) AS last_at FROM messages WHERE guild_id = $1
GROUP BY author_id, author_name ORDER BY author_id, last_at DESC, author_name COLLATE "C"
"""
SELECT_MESSAGE_AUTHORS = "SELECT message_id, author_id, author_name FROM messages WHERE message_id = ANY($1::bigint[])"
SELECT_MINUTES = ("SELECT origin, minute, figures FROM performance_minutes WHERE origin = $1 AND minute >= $2 "
                  "ORDER BY minute")
UPSERT_MINUTE = """
INSERT INTO performance_minutes (origin, minute, figures) VALUES ($1, $2, $3)
ON CONFLICT (origin, minute) DO UPDATE SET figures = excluded.figures
"""
PRUNE_MINUTES = """
DELETE FROM performance_minutes WHERE origin = $1 AND minute < (
    SELECT COALESCE(MIN(minute), 0) FROM (
        SELECT minute FROM performance_minutes WHERE origin = $1 ORDER BY minute DESC LIMIT $2) AS newest)
"""


class DashboardRowsMixin:
    """PostgresStore's dashboard rows."""

    _pool: GuardedPool

    async def author_names(self, guild_id: int) -> list[AuthorSeen]:
        """Each name each author of the guild's stored messages wrote under, with how many and the newest's time."""
        return [AuthorSeen(*row) for row in await self._pool.fetch(SELECT_AUTHOR_NAMES, guild_id)]

    async def message_authors(self, message_ids: Sequence[int]) -> dict[int, tuple[int, str]]:
        rows = await self._pool.fetch(SELECT_MESSAGE_AUTHORS, list(message_ids))
        return {message_id: (author_id, author_name) for message_id, author_id, author_name in rows}

    async def performance_minutes(self, origin: str, since: float) -> list[PerformanceMinute]:
        return [PerformanceMinute(*row) for row in await self._pool.fetch(SELECT_MINUTES, origin, since)]

    async def keep_performance_minutes(self, minutes: Sequence[PerformanceMinute], keep: int) -> None:
        """Write ``minutes`` (a minute written again replaces its figures), then drop all but each written origin's
        newest ``keep`` minutes, in one transaction."""
        if not minutes:
            return
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.executemany(UPSERT_MINUTE, [(m.origin, m.minute, m.figures) for m in minutes])
            for origin in {m.origin for m in minutes}:
                await conn.execute(PRUNE_MINUTES, origin, keep)
