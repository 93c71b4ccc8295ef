"""What the terminal and the dashboard ask of SQLite beyond messages: every name each member wrote under (``@name``,
resolved by cogs/memory/names.py), each message's author (a page's, and a forget that says whose messages go), and
the dashboard's Performance figures by the minute (``performance_minutes``, a few rows, no message text) so
that a restart keeps them."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from ..rows import AuthorSeen, PerformanceMinute

__all__ = ("DashboardRowsMixin",)

# One row per (author, name): a member renamed since still answers to the names they wrote under.
SELECT_AUTHOR_NAMES = """
SELECT author_id, author_name, COUNT(*) AS messages, MAX(created_at) AS last_at FROM messages WHERE guild_id = ?
GROUP BY author_id, author_name ORDER BY author_id, last_at DESC, author_name
"""
SELECT_MESSAGE_AUTHORS = "SELECT message_id, author_id, author_name FROM messages WHERE message_id IN ({marks})"
SELECT_MINUTES = "SELECT origin, minute, figures FROM performance_minutes WHERE origin = ? AND minute >= ? ORDER BY minute"
UPSERT_MINUTE = """
INSERT INTO performance_minutes (origin, minute, figures) VALUES (?, ?, ?)
ON CONFLICT (origin, minute) DO UPDATE SET figures = excluded.figures
"""
# Only the newest ``keep`` minutes of the origin stay: the table never grows past a day or so per process kind.
PRUNE_MINUTES = """
DELETE FROM performance_minutes WHERE origin = ? AND minute < (
    SELECT COALESCE(MIN(minute), 0) FROM (
        SELECT minute FROM performance_minutes WHERE origin = ? ORDER BY minute DESC LIMIT ?))
"""
_CHUNK = 500


class DashboardRowsMixin:
    """SqliteStore's dashboard rows; the writes on the writer's connection (call them under memory's write lock)."""

    _conn: aiosqlite.Connection

    async def author_names(self, guild_id: int) -> list[AuthorSeen]:
        """Each name each author of the guild's stored messages wrote under, with how many and the newest's time."""
        return [AuthorSeen(*row) for row in await self._conn.execute_fetchall(SELECT_AUTHOR_NAMES, (guild_id,))]

    async def message_authors(self, message_ids: Sequence[int]) -> dict[int, tuple[int, str]]:
        authors: dict[int, tuple[int, str]] = {}
        for start in range(0, len(message_ids), _CHUNK):
            chunk = list(message_ids[start:start + _CHUNK])
            sql = SELECT_MESSAGE_AUTHORS.format(marks=",".join("?" * len(chunk)))
            for message_id, author_id, author_name in await self._conn.execute_fetchall(sql, chunk):
                authors[message_id] = (author_id, author_name)
        return authors

    async def performance_minutes(self, origin: str, since: float) -> list[PerformanceMinute]:
        rows = await self._conn.execute_fetchall(SELECT_MINUTES, (origin, since))
        return [PerformanceMinute(*row) for row in rows]

    async def keep_performance_minutes(self, minutes: Sequence[PerformanceMinute], keep: int) -> None:
        """Write ``minutes`` (a minute written again replaces its figures), then drop all but each written origin's
        newest ``keep`` minutes, in one transaction."""
        if not minutes:
            return
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            await self._conn.executemany(UPSERT_MINUTE, [(m.origin, m.minute, m.figures) for m in minutes])
            for origin in {m.origin for m in minutes}:
                await self._conn.execute(PRUNE_MINUTES, (origin, origin, keep))
        except BaseException:
            await self._conn.rollback()
            raise
        await self._conn.commit()
