"""The SQLite store's write path: one ingest step (inserts, edits, deletes, vectors, what waits for a vector,
tombstones) applied to the database in a single transaction."""

from __future__ import annotations

import time

import aiosqlite
import numpy as np

from . import pending as pending_vectors
from . import purge
from ..rows import WriteBatch

__all__ = ("write_batch",)

INSERT_MESSAGE = """
INSERT INTO messages (id, message_id, guild_id, channel_id, parent_channel_id, private_thread, author_id,
                      author_name, author_is_bot, content, created_at, edited_at, reply_to_id)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""
INSERT_FTS = "INSERT INTO messages_fts (rowid, body, author) VALUES (?, ?, ?)"
UPSERT_VECTOR = "INSERT OR REPLACE INTO embeddings (message_rowid, model, vector) VALUES (?, ?, ?)"
DELETE_OTHER_VECTORS = "DELETE FROM embeddings WHERE message_rowid = ? AND model != ?"
UPDATE_MESSAGE = "UPDATE messages SET content = ?, edited_at = ? WHERE id = ?"
UPDATE_FTS = "UPDATE messages_fts SET body = ?, author = ? WHERE rowid = ?"
DELETE_FTS = "DELETE FROM messages_fts WHERE rowid = ?"
DELETE_MESSAGE = "DELETE FROM messages WHERE id = ?"
DELETE_FTS_OLDER = """
DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE guild_id = ? AND created_at < ?)
"""
DELETE_MESSAGES_OLDER = "DELETE FROM messages WHERE guild_id = ? AND created_at < ?"
BUMP_GENERATION = """
INSERT INTO index_generations (guild_id, model, generation) VALUES (?, ?, 1)
ON CONFLICT (guild_id, model) DO UPDATE SET generation = generation + 1
"""
UPSERT_TOMBSTONE = """
INSERT INTO message_tombstones (message_id, deleted_at) VALUES (?, ?)
ON CONFLICT (message_id) DO UPDATE SET deleted_at = excluded.deleted_at
"""


async def write_batch(conn: aiosqlite.Connection, batch: WriteBatch) -> None:
    """Apply ``batch`` in one transaction (``BEGIN IMMEDIATE``: it waits out the busy timeout for another writer);
    a failure, the commit's included, rolls it back."""
    await conn.execute("BEGIN IMMEDIATE")
    try:
        if batch.deletes or batch.edits:  # text leaves: erase its traces soon (purge.py)
            await conn.execute(purge.MARK_PURGE_PENDING, (time.time(),))
        if batch.deletes:
            params = [(rowid,) for rowid in batch.deletes]
            await conn.executemany(DELETE_FTS, params)
            await conn.executemany(DELETE_MESSAGE, params)
        if batch.older_than is not None:
            await conn.execute(DELETE_FTS_OLDER, batch.older_than)
            await conn.execute(DELETE_MESSAGES_OLDER, batch.older_than)
        if batch.inserts:
            await conn.executemany(INSERT_MESSAGE, [row.values() for row in batch.inserts])
            await conn.executemany(
                INSERT_FTS, [(row.rowid, row.fts_body, row.record.author_name) for row in batch.inserts]
            )
        if batch.edits:
            await conn.executemany(UPDATE_MESSAGE, [(e.content, e.edited_at, e.rowid) for e in batch.edits])
            await conn.executemany(UPDATE_FTS, [(e.fts_body, e.author_name, e.rowid) for e in batch.edits])
        if batch.replace_all_models:
            await conn.executemany(DELETE_OTHER_VECTORS, [(rowid, batch.model) for rowid, _ in batch.vectors])
        vectors = [(row.rowid, batch.model, _vector_blob(row.vector)) for row in batch.inserts
                   if row.vector is not None]
        vectors += [(rowid, batch.model, _vector_blob(vector)) for rowid, vector in batch.vectors]
        if vectors:
            await conn.executemany(UPSERT_VECTOR, vectors)
        await pending_vectors.apply(conn, batch)
        await conn.executemany(BUMP_GENERATION, [(guild_id, batch.model) for guild_id in batch.guild_ids])
        if batch.tombstones:
            await conn.executemany(UPSERT_TOMBSTONE, [(m, batch.deleted_at) for m in batch.tombstones])
        await conn.commit()  # inside: a failed commit (a full disk) is rolled back, never left open
    except BaseException:
        await conn.rollback()
        raise


def _vector_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()
