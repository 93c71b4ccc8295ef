"""What the PostgreSQL store holds of one member: the same rows and calls as the SQLite side (sqlite/members.py), in
PostgreSQL's dialect."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from ..member_rows import MemberChannel, MemberMessage, Quotation, member_pages
from .faults import GuardedPool

__all__ = ("MemberRecordsMixin",)

SELECT_MEMBER_CHANNELS = """
SELECT channel_id, MAX(parent_channel_id), BOOL_OR(private_thread), COUNT(*), MIN(created_at), MAX(created_at) FROM messages
WHERE guild_id = $1 AND author_id = $2 GROUP BY channel_id ORDER BY COUNT(*) DESC, channel_id
"""
MEMBER_COLUMNS = "message_id, channel_id, parent_channel_id, content, created_at, edited_at, reply_to_id"
SELECT_MEMBER_PAGE = f"""
SELECT {MEMBER_COLUMNS} FROM messages
WHERE guild_id = $1 AND author_id = $2 AND (created_at, message_id) > ($3, $4)
ORDER BY created_at, message_id LIMIT $5
"""
SELECT_MEMBER_PAGE_NEWEST = f"""
SELECT {MEMBER_COLUMNS} FROM messages
WHERE guild_id = $1 AND author_id = $2 AND (created_at, message_id) < ($3, $4)
ORDER BY created_at DESC, message_id DESC LIMIT $5
"""
# As on SQLite: only a message still held is noted, and the entry goes with its message (ON DELETE CASCADE).
INSERT_QUOTATION = """
INSERT INTO quotations (message_id, guild_id, author_id, channel_id, quoted_at, kind, answer_channel_id,
                        answer_message_id)
SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE EXISTS (SELECT 1 FROM messages WHERE message_id = $1 AND guild_id = $2)
"""
QUOTATION_COLUMNS = ("guild_id, author_id, message_id, channel_id, quoted_at, kind, answer_channel_id, "
                     "answer_message_id")
SELECT_QUOTATIONS = f"""
SELECT {QUOTATION_COLUMNS} FROM quotations WHERE guild_id = $1 AND author_id = $2
ORDER BY quoted_at DESC, message_id LIMIT $3
"""
COUNT_QUOTATIONS = "SELECT kind, COUNT(*) FROM quotations WHERE guild_id = $1 GROUP BY kind"
PRUNE_QUOTATIONS = "DELETE FROM quotations WHERE guild_id = $1 AND quoted_at < $2"
SELECT_LAST_EXPORT = "SELECT exported_at FROM member_exports WHERE guild_id = $1 AND user_id = $2"
UPSERT_EXPORT = """
INSERT INTO member_exports (guild_id, user_id, exported_at) VALUES ($1, $2, $3)
ON CONFLICT (guild_id, user_id) DO UPDATE SET exported_at = excluded.exported_at
"""


class MemberRecordsMixin:
    """PostgresStore's member records."""

    _pool: GuardedPool

    async def member_channels(self, guild_id: int, author_id: int) -> list[MemberChannel]:
        """Every channel holding the member's messages in ``guild_id``, most messages first."""
        return [MemberChannel(*row) for row in await self._pool.fetch(SELECT_MEMBER_CHANNELS, guild_id, author_id)]

    async def iter_member_messages(self, guild_id: int, author_id: int, *, newest_first: bool = False,
                                   page: int = 512) -> AsyncIterator[MemberMessage]:
        """The member's messages in ``guild_id`` in time order (or newest first), read a page at a time."""
        sql = SELECT_MEMBER_PAGE_NEWEST if newest_first else SELECT_MEMBER_PAGE

        async def fetch_page(after: tuple[float, int], size: int) -> Sequence[Any]:
            return await self._pool.fetch(sql, guild_id, author_id, *after, size)

        async for message in member_pages(fetch_page, page, newest_first):
            yield message

    async def record_quotations(self, quotations: Sequence[Quotation]) -> int:
        """Note ``quotations`` in one transaction; returns how many were noted (a forgotten message's are not)."""
        noted = 0
        if not quotations:
            return noted
        async with self._pool.acquire() as conn, conn.transaction():
            for q in quotations:
                status = await conn.execute(INSERT_QUOTATION, q.message_id, q.guild_id, q.author_id, q.channel_id,
                                            q.quoted_at, q.kind, q.answer_channel_id, q.answer_message_id)
                noted += int(status.split()[-1])
        return noted

    async def member_quotations(self, guild_id: int, author_id: int, limit: int | None = None) -> list[Quotation]:
        """Where the member's messages were quoted in ``guild_id``, newest first (``limit`` None: every entry kept)."""
        rows = await self._pool.fetch(SELECT_QUOTATIONS, guild_id, author_id, limit)
        return [Quotation(*row) for row in rows]

    async def quotation_counts(self, guild_id: int) -> dict[str, int]:
        """How many quotations the log keeps in ``guild_id``, by kind (the dashboard shows counts, not the log)."""
        return {kind: count for kind, count in await self._pool.fetch(COUNT_QUOTATIONS, guild_id)}

    async def prune_quotations(self, guild_id: int, before: float) -> int:
        """Drop ``guild_id``'s quotations noted before ``before`` (the retention); returns how many went."""
        return int((await self._pool.execute(PRUNE_QUOTATIONS, guild_id, before)).split()[-1])

    async def last_export(self, guild_id: int, user_id: int) -> float | None:
        rows = await self._pool.fetch(SELECT_LAST_EXPORT, guild_id, user_id)
        return float(rows[0][0]) if rows else None

    async def note_export(self, guild_id: int, user_id: int, at: float | None = None) -> None:
        """Record that the member was sent an export now (the daily limit counts from it)."""
        await self._pool.execute(UPSERT_EXPORT, guild_id, user_id, time.time() if at is None else at)
