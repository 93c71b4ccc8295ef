"""The messages that still need a vector, kept in PostgreSQL (``pending_vectors``): the same rows and reads as the
SQLite side (pending_vectors.py), in PostgreSQL's dialect. Processes sharing the database may embed one message
twice; the vector is the same, and the last write wins."""

from __future__ import annotations

import time
from collections.abc import Sequence

import asyncpg

from ..rows import VectorInput, WriteBatch, vector_input
from ...vectors.stored import VectorSource
from .faults import GuardedPool

__all__ = ("PostgresPendingMixin", "apply")

# Only rows that are there: another process may have stored the same message first, under its own row id.
MARK_PENDING = """
INSERT INTO pending_vectors (message_rowid, guild_id) SELECT id, guild_id FROM messages WHERE id = ANY($1::bigint[])
ON CONFLICT (message_rowid) DO UPDATE SET rejected_at = NULL, error = NULL
"""
MARK_SUCCESSORS = """
INSERT INTO pending_vectors (message_rowid, guild_id)
SELECT next_id, guild_id FROM (
    SELECT (SELECT n.id FROM messages AS n
            WHERE n.guild_id = m.guild_id AND n.channel_id = m.channel_id
              AND (n.created_at, n.message_id) > (m.created_at, m.message_id)
            ORDER BY n.created_at, n.message_id LIMIT 1) AS next_id, guild_id
    FROM messages AS m WHERE id = ANY($1::bigint[])
) AS successors
WHERE next_id IS NOT NULL
ON CONFLICT (message_rowid) DO UPDATE SET rejected_at = NULL, error = NULL
"""
RESOLVE_PENDING = "DELETE FROM pending_vectors WHERE message_rowid = ANY($1::bigint[])"
REJECT_PENDING = "UPDATE pending_vectors SET rejected_at = $1, error = $2 WHERE message_rowid = $3"
DROP_VECTORS = "DELETE FROM embeddings WHERE message_rowid = ANY($1::bigint[])"
RESOLVE_EMBEDDED = """
DELETE FROM pending_vectors WHERE message_rowid IN (SELECT message_rowid FROM embeddings WHERE model = $1)
"""
MARK_UNEMBEDDED = """
INSERT INTO pending_vectors (message_rowid, guild_id)
SELECT m.id, m.guild_id FROM messages AS m
WHERE NOT EXISTS (SELECT 1 FROM embeddings AS e WHERE e.model = $1 AND e.message_rowid = m.id)
ON CONFLICT (message_rowid) DO NOTHING
"""
SELECT_GUILDS = "SELECT DISTINCT guild_id FROM pending_vectors WHERE rejected_at IS NULL"
_SELECT_INPUTS = """
SELECT m.id, m.message_id, m.guild_id, m.author_name, m.content, p.author_name, p.content
FROM pending_vectors AS v JOIN messages AS m ON m.id = v.message_rowid
LEFT JOIN LATERAL (
    SELECT q.author_name, q.content FROM messages AS q
    WHERE q.guild_id = m.guild_id AND q.channel_id = m.channel_id
      AND (q.created_at, q.message_id) < (m.created_at, m.message_id)
    ORDER BY q.created_at DESC, q.message_id DESC LIMIT 1
) AS p ON TRUE
WHERE v.guild_id = $1 AND v.rejected_at IS NULL AND {which}
ORDER BY v.message_rowid LIMIT {limit}
"""
SELECT_PAGE = _SELECT_INPUTS.format(which="v.message_rowid > $2", limit="$3")
SELECT_LISTED = _SELECT_INPUTS.format(which="v.message_rowid = ANY($2::bigint[])", limit="ALL")
COUNT_PENDING = "SELECT COUNT(*) - COUNT(rejected_at), COUNT(rejected_at) FROM pending_vectors"


async def apply(conn: asyncpg.Connection, batch: WriteBatch) -> None:
    """``batch``'s changes to what needs a vector, inside the caller's transaction (after its inserts)."""
    if batch.dropped_vectors:
        await conn.execute(DROP_VECTORS, batch.dropped_vectors)
    if batch.pending:
        await conn.execute(MARK_PENDING, batch.pending)
    if batch.successors_of:
        await conn.execute(MARK_SUCCESSORS, batch.successors_of)
    if batch.resolved:
        await conn.execute(RESOLVE_PENDING, batch.resolved)
    if batch.rejected:
        now = time.time()
        await conn.executemany(REJECT_PENDING, [(now, error, rowid) for rowid, error in batch.rejected])


class PostgresPendingMixin:
    """``PostgresStore``'s reads of ``pending_vectors``, on its pool; its ``write`` marks and clears rows."""

    _pool: GuardedPool

    async def pending_guilds(self) -> list[int]:
        return [row[0] for row in await self._pool.fetch(SELECT_GUILDS)]

    async def pending_page(self, guild_id: int, after_rowid: int, limit: int) -> list[VectorInput]:
        return [vector_input(row) for row in await self._pool.fetch(SELECT_PAGE, guild_id, after_rowid, limit)]

    async def pending_listed(self, guild_id: int, rowids: Sequence[int]) -> dict[int, VectorSource]:
        if not rowids:
            return {}
        rows = await self._pool.fetch(SELECT_LISTED, guild_id, list(rowids))
        return {item.rowid: item.source for item in map(vector_input, rows)}

    async def pending_count(self) -> tuple[int, int]:
        [(waiting, rejected)] = await self._pool.fetch(COUNT_PENDING)
        return waiting, rejected

    async def resolve_embedded(self, model: str) -> None:
        await self._pool.execute(RESOLVE_EMBEDDED, model)

    async def mark_unembedded(self, model: str) -> int:
        status = await self._pool.execute(MARK_UNEMBEDDED, model)  # "INSERT 0 <count>"
        return int(status.rsplit(" ", 1)[1])
