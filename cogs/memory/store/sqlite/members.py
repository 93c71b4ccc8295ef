"""What the SQLite store holds of one member (store/member_rows.py): their channels, their messages read a page at a
time (an export of 200,000 never sits in memory whole), the quotation log and the time of their last export."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiosqlite

from ..member_rows import MemberChannel, MemberMessage, Quotation, member_pages

__all__ = ("MemberRecordsMixin",)

SELECT_MEMBER_CHANNELS = """
SELECT channel_id, MAX(parent_channel_id), MAX(private_thread), COUNT(*), MIN(created_at), MAX(created_at) FROM messages
WHERE guild_id = ? AND author_id = ? GROUP BY channel_id ORDER BY COUNT(*) DESC, channel_id
"""
MEMBER_COLUMNS = "message_id, channel_id, parent_channel_id, content, created_at, edited_at, reply_to_id"
SELECT_MEMBER_PAGE = f"""
SELECT {MEMBER_COLUMNS} FROM messages
WHERE guild_id = ? AND author_id = ? AND (created_at, message_id) > (?, ?)
ORDER BY created_at, message_id LIMIT ?
"""
SELECT_MEMBER_PAGE_NEWEST = f"""
SELECT {MEMBER_COLUMNS} FROM messages
WHERE guild_id = ? AND author_id = ? AND (created_at, message_id) < (?, ?)
ORDER BY created_at DESC, message_id DESC LIMIT ?
"""
# Only a message memory still holds is noted: one forgotten since its recall leaves no entry behind. The entry goes
# with its message (ON DELETE CASCADE), so every forget, the erasure ledger's again after a restore included, takes it.
INSERT_QUOTATION = """
INSERT INTO quotations (message_id, guild_id, author_id, channel_id, quoted_at, kind, answer_channel_id,
                        answer_message_id)
SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM messages WHERE message_id = ? AND guild_id = ?)
"""
QUOTATION_COLUMNS = ("guild_id, author_id, message_id, channel_id, quoted_at, kind, answer_channel_id, "
                     "answer_message_id")
SELECT_QUOTATIONS = f"""
SELECT {QUOTATION_COLUMNS} FROM quotations WHERE guild_id = ? AND author_id = ?
ORDER BY quoted_at DESC, message_id LIMIT ?
"""
COUNT_QUOTATIONS = "SELECT kind, COUNT(*) FROM quotations WHERE guild_id = ? GROUP BY kind"
PRUNE_QUOTATIONS = "DELETE FROM quotations WHERE guild_id = ? AND quoted_at < ?"
SELECT_LAST_EXPORT = "SELECT exported_at FROM member_exports WHERE guild_id = ? AND user_id = ?"
UPSERT_EXPORT = """
INSERT INTO member_exports (guild_id, user_id, exported_at) VALUES (?, ?, ?)
ON CONFLICT (guild_id, user_id) DO UPDATE SET exported_at = excluded.exported_at
"""
_NO_LIMIT = -1  # SQLite's LIMIT -1: every row


class MemberRecordsMixin:
    """SqliteStore's member records: writes on the writer's connection (call them between ingest writes)."""

    _conn: aiosqlite.Connection

    async def member_channels(self, guild_id: int, author_id: int) -> list[MemberChannel]:
        """Every channel holding the member's messages in ``guild_id``, most messages first."""
        rows = await self._conn.execute_fetchall(SELECT_MEMBER_CHANNELS, (guild_id, author_id))
        return [MemberChannel(channel, parent, bool(private), count, first, last)
                for channel, parent, private, count, first, last in rows]

    async def iter_member_messages(self, guild_id: int, author_id: int, *, newest_first: bool = False,
                                   page: int = 512) -> AsyncIterator[MemberMessage]:
        """The member's messages in ``guild_id`` in time order (or newest first), read a page at a time."""
        sql = SELECT_MEMBER_PAGE_NEWEST if newest_first else SELECT_MEMBER_PAGE

        async def fetch_page(after: tuple[float, int], size: int) -> Sequence[Any]:
            return list(await self._conn.execute_fetchall(sql, (guild_id, author_id, *after, size)))

        async for message in member_pages(fetch_page, page, newest_first):
            yield message

    async def record_quotations(self, quotations: Sequence[Quotation]) -> int:
        """Note ``quotations`` in one transaction; returns how many were noted (a forgotten message's are not)."""
        if not quotations:
            return 0
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            before = self._conn.total_changes
            await self._conn.executemany(INSERT_QUOTATION, [
                (q.message_id, q.guild_id, q.author_id, q.channel_id, q.quoted_at, q.kind, q.answer_channel_id,
                 q.answer_message_id, q.message_id, q.guild_id) for q in quotations])
            noted = self._conn.total_changes - before
        except BaseException:
            await self._conn.rollback()
            raise
        await self._conn.commit()
        return noted

    async def member_quotations(self, guild_id: int, author_id: int, limit: int | None = None) -> list[Quotation]:
        """Where the member's messages were quoted in ``guild_id``, newest first (``limit`` None: every entry kept)."""
        rows = await self._conn.execute_fetchall(
            SELECT_QUOTATIONS, (guild_id, author_id, _NO_LIMIT if limit is None else limit))
        return [Quotation(*row) for row in rows]

    async def quotation_counts(self, guild_id: int) -> dict[str, int]:
        """How many quotations the log keeps in ``guild_id``, by kind (the dashboard shows counts, not the log)."""
        return {kind: count for kind, count in await self._conn.execute_fetchall(COUNT_QUOTATIONS, (guild_id,))}

    async def prune_quotations(self, guild_id: int, before: float) -> int:
        """Drop ``guild_id``'s quotations noted before ``before`` (the retention); returns how many went."""
        cursor = await self._conn.execute(PRUNE_QUOTATIONS, (guild_id, before))
        return cursor.rowcount

    async def last_export(self, guild_id: int, user_id: int) -> float | None:
        rows = list(await self._conn.execute_fetchall(SELECT_LAST_EXPORT, (guild_id, user_id)))
        return float(rows[0][0]) if rows else None

    async def note_export(self, guild_id: int, user_id: int, at: float | None = None) -> None:
        """Record that the member was sent an export now (the daily limit counts from it)."""
        await self._conn.execute(UPSERT_EXPORT, (guild_id, user_id, time.time() if at is None else at))
