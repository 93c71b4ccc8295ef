"""The messages that still need a vector, kept in SQLite (``pending_vectors``), so a restart finds them: what the
vector filler reads, each message with the one before it in its channel, which its vector is computed with."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import aiosqlite

from ..rows import VectorInput, WriteBatch, vector_input
from ...vectors.stored import VectorSource

__all__ = ("PendingVectorsMixin", "apply")

# A message whose text or predecessor changed needs a vector again, even one rejected before.
MARK_PENDING = """
INSERT INTO pending_vectors (message_rowid, guild_id) SELECT id, guild_id FROM messages WHERE id = ?
ON CONFLICT (message_rowid) DO UPDATE SET rejected_at = NULL, error = NULL
"""
# A message stored before one it follows (an import, a late event) changes that one's predecessor.
MARK_SUCCESSORS = """
INSERT INTO pending_vectors (message_rowid, guild_id)
SELECT (SELECT n.id FROM messages AS n
        WHERE n.guild_id = m.guild_id AND n.channel_id = m.channel_id
          AND (n.created_at, n.message_id) > (m.created_at, m.message_id)
        ORDER BY n.created_at, n.message_id LIMIT 1) AS next_id, guild_id
FROM messages AS m WHERE id IN (SELECT value FROM json_each(?)) AND next_id IS NOT NULL
ON CONFLICT (message_rowid) DO UPDATE SET rejected_at = NULL, error = NULL
"""
RESOLVE_PENDING = "DELETE FROM pending_vectors WHERE message_rowid = ?"
REJECT_PENDING = "UPDATE pending_vectors SET rejected_at = ?, error = ? WHERE message_rowid = ?"
DROP_VECTORS = "DELETE FROM embeddings WHERE message_rowid = ?"
# After a switch to another model, every message it has a vector for is done, whatever waited before.
RESOLVE_EMBEDDED = """
DELETE FROM pending_vectors WHERE message_rowid IN (SELECT message_rowid FROM embeddings WHERE model = ?)
"""
# Every message with no vector under a model (the current one): after a restart with another model or input form
# (embedding.INPUT_FORM), they all wait for the filler. A message the model rejected stays rejected.
_UNEMBEDDED = """
FROM messages AS m WHERE NOT EXISTS (SELECT 1 FROM embeddings AS e WHERE e.model = ? AND e.message_rowid = m.id)
"""
MARK_UNEMBEDDED = f"""
INSERT INTO pending_vectors (message_rowid, guild_id) SELECT m.id, m.guild_id {_UNEMBEDDED}
ON CONFLICT (message_rowid) DO NOTHING
"""
# Read first: a start whose messages all have their vector (the usual one) writes nothing, so needs no write lock.
ANY_UNEMBEDDED = f"SELECT EXISTS (SELECT 1 {_UNEMBEDDED})"
SELECT_GUILDS = "SELECT DISTINCT guild_id FROM pending_vectors WHERE rejected_at IS NULL"
# One guild's waiting messages, each with its predecessor: the subquery walks the channel-order index one step back.
_SELECT_INPUTS = """
SELECT c.id, c.message_id, c.guild_id, c.author_name, c.content, p.author_name, p.content
FROM (
    SELECT m.id, m.message_id, m.guild_id, m.author_name, m.content,
           (SELECT q.id FROM messages AS q
            WHERE q.guild_id = m.guild_id AND q.channel_id = m.channel_id
              AND (q.created_at, q.message_id) < (m.created_at, m.message_id)
            ORDER BY q.created_at DESC, q.message_id DESC LIMIT 1) AS previous_id
    FROM pending_vectors AS v CROSS JOIN messages AS m ON m.id = v.message_rowid
    WHERE v.guild_id = ? AND v.rejected_at IS NULL AND {which}
    ORDER BY v.message_rowid LIMIT ?
) AS c LEFT JOIN messages AS p ON p.id = c.previous_id
ORDER BY c.id
"""
SELECT_PAGE = _SELECT_INPUTS.format(which="v.message_rowid > ?")
SELECT_LISTED = _SELECT_INPUTS.format(which="v.message_rowid IN (SELECT value FROM json_each(?))")
COUNT_PENDING = "SELECT COUNT(*) - COUNT(rejected_at), COUNT(rejected_at) FROM pending_vectors"


async def apply(conn: aiosqlite.Connection, batch: WriteBatch) -> None:
    """``batch``'s changes to what needs a vector, inside the caller's transaction (after its inserts)."""
    if batch.dropped_vectors:
        await conn.executemany(DROP_VECTORS, [(rowid,) for rowid in batch.dropped_vectors])
    if batch.pending:
        await conn.executemany(MARK_PENDING, [(rowid,) for rowid in batch.pending])
    if batch.successors_of:
        await conn.execute(MARK_SUCCESSORS, (json.dumps(batch.successors_of),))
    if batch.resolved:
        await conn.executemany(RESOLVE_PENDING, [(rowid,) for rowid in batch.resolved])
    if batch.rejected:
        now = time.time()
        await conn.executemany(REJECT_PENDING, [(now, error, rowid) for rowid, error in batch.rejected])


class PendingVectorsMixin:
    """``SqliteStore``'s reads of ``pending_vectors``, on its connection; its ``write`` marks and clears rows."""

    _conn: aiosqlite.Connection

    async def pending_guilds(self) -> list[int]:
        """The guilds with messages waiting for a vector."""
        return [row[0] for row in await self._conn.execute_fetchall(SELECT_GUILDS)]

    async def pending_page(self, guild_id: int, after_rowid: int, limit: int) -> list[VectorInput]:
        """Up to ``limit`` of the guild's messages waiting for a vector (rejected ones aside), by row id after
        ``after_rowid``."""
        rows = await self._conn.execute_fetchall(SELECT_PAGE, (guild_id, after_rowid, limit))
        return [vector_input(row) for row in rows]

    async def pending_listed(self, guild_id: int, rowids: Sequence[int]) -> dict[int, VectorSource]:
        """Of the guild's ``rowids``, those still waiting for a vector, with what it must now be computed from."""
        if not rowids:
            return {}
        rows = await self._conn.execute_fetchall(SELECT_LISTED, (guild_id, json.dumps(list(rowids)), len(rowids)))
        return {item.rowid: item.source for item in map(vector_input, rows)}

    async def pending_count(self) -> tuple[int, int]:
        """(waiting, rejected): stored messages without a vector yet, and those the model could not embed."""
        [(waiting, rejected)] = await self._conn.execute_fetchall(COUNT_PENDING)
        return waiting, rejected

    async def resolve_embedded(self, model: str) -> None:
        """Clear every waiting message that has a vector for ``model`` (after a switch embedded them all)."""
        await self._conn.execute(RESOLVE_EMBEDDED, (model,))

    async def mark_unembedded(self, model: str) -> int:
        """Mark every stored message with no vector for ``model`` as waiting for one; returns how many were marked."""
        [(unembedded,)] = await self._conn.execute_fetchall(ANY_UNEMBEDDED, (model,))
        if not unembedded:
            return 0
        cursor = await self._conn.execute(MARK_UNEMBEDDED, (model,))
        return cursor.rowcount
