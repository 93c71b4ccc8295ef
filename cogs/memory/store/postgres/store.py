"""PostgresStore: the PostgreSQL + pgvector store — the same rows as SqliteStore, shared by several processes.

Every write is idempotent where two processes may race: a message is inserted once (``ON CONFLICT (message_id)``)
and never after its tombstone; a vector is written only for the row that won. Forgetting is a plain DELETE: the
rows become dead tuples, unreadable through SQL at once and reclaimed by VACUUM (``erase_forgotten``).
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import asyncpg
import numpy as np

from ..rows import ChannelMessage, NewRow, RowRef, WriteBatch, channel_pages
from . import fts, pending
from .faults import GuardedPool, opening
from .channels import ChannelGuildsMixin
from .dashboard_rows import DashboardRowsMixin
from .members import MemberRecordsMixin
from .names import PlaceNamesMixin
from .pending import PostgresPendingMixin
from .schema import ROWID_BLOCK, apply_migrations

__all__ = ("PostgresStore",)

log = logging.getLogger(__name__)

QueryLogger = Callable[[Any], None]

NEXT_ROWID_BLOCK = "SELECT nextval('message_rowid_blocks')"
# The document is body words (A) and author words (B), built from Python-tokenised text (fts.py).
DOCUMENT = "setweight(to_tsvector('simple', {body}), 'A') || setweight(to_tsvector('simple', {author}), 'B')"
# Stored once whichever process gets there first, and never once a delete left its tombstone.
INSERT_MESSAGE = f"""
INSERT INTO messages (id, message_id, guild_id, channel_id, parent_channel_id, private_thread, author_id,
                      author_name, author_is_bot, content, created_at, edited_at, reply_to_id, document)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, {DOCUMENT.format(body="$14", author="$15")}
WHERE NOT EXISTS (SELECT 1 FROM message_tombstones WHERE message_id = $2)
ON CONFLICT (message_id) DO NOTHING
"""
# Written only if the row is there under this id: a message another process stored first keeps its own vector.
UPSERT_VECTOR = """
INSERT INTO embeddings (message_rowid, model, vector) SELECT id, $2, $3 FROM messages WHERE id = $1
ON CONFLICT (model, message_rowid) DO UPDATE SET vector = excluded.vector
"""
DELETE_OTHER_VECTORS = "DELETE FROM embeddings WHERE message_rowid = $1 AND model <> $2"
UPDATE_MESSAGE = f"""
UPDATE messages SET content = $2, edited_at = $3, document = {DOCUMENT.format(body="$4", author="$5")} WHERE id = $1
"""
DELETE_MESSAGES = "DELETE FROM messages WHERE id = ANY($1::bigint[])"
DELETE_MESSAGES_OLDER = "DELETE FROM messages WHERE guild_id = $1 AND created_at < $2"
BUMP_GENERATION = """
INSERT INTO index_generations (guild_id, model, generation) VALUES ($1, $2, 1)
ON CONFLICT (guild_id, model) DO UPDATE SET generation = index_generations.generation + 1
"""
UPSERT_TOMBSTONE = """
INSERT INTO message_tombstones (message_id, deleted_at) VALUES ($1, $2)
ON CONFLICT (message_id) DO UPDATE SET deleted_at = excluded.deleted_at
"""
PRUNE_TOMBSTONES = "DELETE FROM message_tombstones WHERE deleted_at < $1"
SELECT_KNOWN_IDS = """
SELECT message_id, FALSE FROM messages WHERE message_id = ANY($1::bigint[])
UNION ALL SELECT message_id, TRUE FROM message_tombstones WHERE message_id = ANY($1::bigint[])
"""
REF_COLUMNS = "id, message_id, guild_id, channel_id, created_at"
CHANNEL_COLUMNS = "id, message_id, guild_id, channel_id, author_name, content, created_at"
SELECT_REFS_BY_MESSAGE_ID = f"SELECT {REF_COLUMNS} FROM messages WHERE message_id = ANY($1::bigint[])"
SELECT_REFS_CHANNEL = f"""
SELECT {REF_COLUMNS} FROM messages WHERE guild_id = $1 AND (channel_id = $2 OR parent_channel_id = $2)
"""
SELECT_REFS_GUILD = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = $1"
SELECT_REFS_AUTHOR_EVERYWHERE = f"SELECT {REF_COLUMNS} FROM messages WHERE author_id = $1"
SELECT_REFS_AUTHOR = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = $1 AND author_id = $2"
SELECT_REFS_OLDER = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = $1 AND created_at < $2"
SELECT_MESSAGE = f"SELECT {CHANNEL_COLUMNS} FROM messages WHERE message_id = $1"
SELECT_PREVIOUS = f"""
SELECT {CHANNEL_COLUMNS} FROM messages
WHERE guild_id = $1 AND channel_id = $2 AND (created_at, message_id) < ($3, $4)
ORDER BY created_at DESC, message_id DESC LIMIT 1
"""
SELECT_CHANNEL_PAGE = f"""
SELECT {CHANNEL_COLUMNS} FROM messages
WHERE guild_id = $1 AND channel_id = $2 AND (created_at, message_id) > ($3, $4)
ORDER BY created_at, message_id LIMIT $5
"""
SELECT_CHANNELS = "SELECT DISTINCT channel_id FROM messages WHERE guild_id = $1"
SELECT_HAS_VECTOR = "SELECT 1 FROM embeddings WHERE model = $1 AND message_rowid = $2"
SELECT_GUILDS = "SELECT DISTINCT guild_id FROM messages"
COUNT_GUILD_MESSAGES = "SELECT COUNT(*) FROM messages WHERE guild_id = $1"
COUNT_GUILD_VECTORS = """
SELECT COUNT(*) FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid WHERE m.guild_id = $1 AND e.model = $2
"""
SELECT_SETTINGS = "SELECT settings FROM guild_settings WHERE guild_id = $1"
# One statement each, so two processes changing different keys of one guild never lose each other's change.
MERGE_SETTING = """
INSERT INTO guild_settings (guild_id, settings) VALUES ($1, jsonb_build_object($2::text, $3::jsonb))
ON CONFLICT (guild_id) DO UPDATE SET settings = guild_settings.settings || excluded.settings
"""
REMOVE_SETTING = "UPDATE guild_settings SET settings = settings - $2::text WHERE guild_id = $1"
DELETE_EMPTY_SETTINGS = "DELETE FROM guild_settings WHERE guild_id = $1 AND settings = '{}'::jsonb"
INSERT_OPT_OUT = "INSERT INTO opt_outs (guild_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
DELETE_OPT_OUT = "DELETE FROM opt_outs WHERE guild_id = $1 AND user_id = $2"
SELECT_OPT_OUTS = "SELECT guild_id, user_id FROM opt_outs"
SELECT_ERASURES = "SELECT id, entry FROM erasures"
INSERT_ERASURE = "INSERT INTO erasures (id, at, entry) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
# Dead tuples of deleted and edited rows stay in the table files until VACUUM marks their space free.
VACUUM = "VACUUM messages, embeddings, place_names"


def _encode_vector(vector: np.ndarray) -> bytes:
    """pgvector's binary form: dimension and a reserved zero as int16, then big-endian float32s."""
    values = np.ascontiguousarray(vector, dtype=">f4")
    return struct.pack(">HH", values.shape[0], 0) + values.tobytes()


def _decode_vector(data: bytes) -> np.ndarray:
    dimension, _ = struct.unpack_from(">HH", data)
    return np.frombuffer(data, dtype=">f4", count=dimension, offset=4).astype(np.float32)


async def _prepare_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("vector", schema="public", encoder=_encode_vector, decoder=_decode_vector,
                              format="binary")


class PostgresStore(PostgresPendingMixin, PlaceNamesMixin, MemberRecordsMixin, ChannelGuildsMixin, DashboardRowsMixin):
    """An asyncpg pool over one PostgreSQL database; each ``write`` is one transaction.

    ``query_logger`` (tests) sees every statement each pooled connection runs.
    """

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self._pool = GuardedPool(pool, url)
        self.url = url
        self._rowids = range(0)
        self._spare = range(0)
        self._forgotten = False

    def local_file(self) -> None:
        """None: the database lives on its server."""
        return None

    @classmethod
    async def open(cls, url: str, query_logger: QueryLogger | None = None, max_size: int = 8) -> PostgresStore:
        """Raises ``DatabaseUnavailableError`` when the server cannot be reached now (opening again later may work),
        ``StoreOpenError`` for what only a person can fix: a refused login, a missing database, a newer schema."""
        async with opening(url):
            conn = await asyncpg.connect(url)
        try:
            async with opening(url):
                await apply_migrations(conn)
        finally:
            await conn.close()

        async def init(connection: asyncpg.Connection) -> None:
            await _prepare_connection(connection)
            if query_logger is not None:
                connection.add_query_logger(query_logger)

        # No connection floor: with one, a lost server makes the pool log a traceback at every reconnection try;
        # connections are opened as they are needed (and kept while in use) instead.
        async with opening(url):
            pool = await asyncpg.create_pool(url, min_size=0, max_size=max_size, init=init)
        store = cls(pool, url)
        try:
            await store._reserve_rowids()
        except BaseException:
            await pool.close()
            raise
        return store

    async def close(self) -> None:
        await self._pool.close()

    # -- writes ---------------------------------------------------------------------------------------------

    async def _reserve_rowids(self) -> None:
        """Keep a spare block of row ids from the shared sequence: a block no other process gets."""
        if not self._spare:
            start = await self._pool.fetchval(NEXT_ROWID_BLOCK)
            self._spare = range(start, start + ROWID_BLOCK)

    def allocate_rowids(self, count: int) -> range:
        """Row ids for new messages, from this process's block; the spare block takes over when it runs out.

        Synchronous like SqliteStore's (ingest calls it between awaits); ``write`` reserves the next spare. The
        ids a switch leaves unused are skipped: row ids only need to be unique and never reused.
        """
        if count > len(self._rowids):
            self._rowids, self._spare = self._spare, range(0)
        if count > len(self._rowids):
            raise RuntimeError(f"{count} row ids asked at once; at most {len(self._rowids)} are reserved")
        allocated = range(self._rowids.start, self._rowids.start + count)
        self._rowids = range(allocated.stop, self._rowids.stop)
        return allocated

    async def write(self, batch: WriteBatch) -> None:
        """Apply one ingest step in a single transaction and bump the touched guilds' index generations."""
        async with self._pool.acquire() as conn, conn.transaction():
            if batch.deletes:
                await conn.execute(DELETE_MESSAGES, batch.deletes)  # their vectors go by ON DELETE CASCADE
            if batch.older_than is not None:
                await conn.execute(DELETE_MESSAGES_OLDER, *batch.older_than)
            if batch.inserts:
                await conn.executemany(INSERT_MESSAGE, [_message_params(row) for row in batch.inserts])
            if batch.edits:
                await conn.executemany(UPDATE_MESSAGE, [
                    (e.rowid, e.content, e.edited_at, fts.words(e.fts_body), fts.words(e.author_name))
                    for e in batch.edits])
            if batch.replace_all_models:
                await conn.executemany(DELETE_OTHER_VECTORS, [(rowid, batch.model) for rowid, _ in batch.vectors])
            vectors = [(row.rowid, batch.model, row.vector) for row in batch.inserts if row.vector is not None]
            vectors += [(rowid, batch.model, vector) for rowid, vector in batch.vectors]
            if vectors:
                await conn.executemany(UPSERT_VECTOR, vectors)
            await pending.apply(conn, batch)
            await conn.executemany(BUMP_GENERATION, [(guild_id, batch.model) for guild_id in sorted(batch.guild_ids)])
            if batch.tombstones:
                await conn.executemany(UPSERT_TOMBSTONE, [(m, batch.deleted_at) for m in batch.tombstones])
        if batch.deletes or batch.edits or batch.older_than is not None:
            self._forgotten = True
        await self._reserve_rowids()

    async def reload_next_rowid(self) -> None:
        """Nothing to reload: row ids come in blocks from a shared sequence, so no other process takes ours."""

    async def purge_pending(self) -> bool:
        """Whether this process deleted or edited text since the last VACUUM it ran."""
        return self._forgotten

    async def erase_forgotten(self) -> bool:
        """VACUUM the message tables: deleted and replaced rows' space is marked free for reuse.

        Their bytes may stay in the files until the space is reused (``VACUUM FULL`` rewrites the tables) and in
        WAL segments until they are recycled; see the README.
        """
        await self._pool.execute(VACUUM)
        self._forgotten = False
        return True

    async def prune_tombstones(self, before: float) -> int:
        status = await self._pool.execute(PRUNE_TOMBSTONES, before)
        return int(status.split()[-1])

    # -- reads for ingest -----------------------------------------------------------------------------------

    async def known_message_ids(self, message_ids: Sequence[int]) -> tuple[set[int], set[int]]:
        """(stored, deleted): which of ``message_ids`` are stored, and which have a tombstone."""
        stored: set[int] = set()
        deleted: set[int] = set()
        for message_id, is_tombstone in await self._pool.fetch(SELECT_KNOWN_IDS, list(message_ids)):
            (deleted if is_tombstone else stored).add(message_id)
        return stored, deleted

    async def _refs(self, sql: str, *params: Any) -> list[RowRef]:
        return [RowRef(*row) for row in await self._pool.fetch(sql, *params)]

    async def refs_for_message_ids(self, message_ids: Sequence[int]) -> list[RowRef]:
        return await self._refs(SELECT_REFS_BY_MESSAGE_ID, list(message_ids))

    async def refs_for_channel(self, guild_id: int, channel_id: int) -> list[RowRef]:
        """A channel's messages and those of its threads."""
        return await self._refs(SELECT_REFS_CHANNEL, guild_id, channel_id)

    async def refs_for_guild(self, guild_id: int) -> list[RowRef]:
        return await self._refs(SELECT_REFS_GUILD, guild_id)

    async def refs_for_author(self, guild_id: int | None, author_id: int) -> list[RowRef]:
        if guild_id is None:
            return await self._refs(SELECT_REFS_AUTHOR_EVERYWHERE, author_id)
        return await self._refs(SELECT_REFS_AUTHOR, guild_id, author_id)

    async def refs_older_than(self, guild_id: int, cutoff: float) -> list[RowRef]:
        return await self._refs(SELECT_REFS_OLDER, guild_id, cutoff)

    async def _channel_message(self, sql: str, *params: Any) -> ChannelMessage | None:
        row = await self._pool.fetchrow(sql, *params)
        return ChannelMessage(*row) if row else None

    async def message(self, message_id: int) -> ChannelMessage | None:
        return await self._channel_message(SELECT_MESSAGE, message_id)

    async def previous_in_channel(
        self, guild_id: int, channel_id: int, created_at: float, message_id: int
    ) -> ChannelMessage | None:
        return await self._channel_message(SELECT_PREVIOUS, guild_id, channel_id, created_at, message_id)

    async def iter_channel(self, guild_id: int, channel_id: int, page: int = 512) -> AsyncIterator[ChannelMessage]:
        """Every message of a channel in order, read in pages (keyset pagination)."""
        async def fetch_page(after: tuple[float, int], size: int) -> Sequence[Sequence[Any]]:
            return await self._pool.fetch(SELECT_CHANNEL_PAGE, guild_id, channel_id, *after, size)

        async for message in channel_pages(fetch_page, page):
            yield message

    async def channel_ids(self, guild_id: int) -> list[int]:
        return [row[0] for row in await self._pool.fetch(SELECT_CHANNELS, guild_id)]

    async def has_vector(self, rowid: int, model: str) -> bool:
        return await self._pool.fetchval(SELECT_HAS_VECTOR, model, rowid) is not None

    async def guild_ids(self) -> list[int]:
        return [row[0] for row in await self._pool.fetch(SELECT_GUILDS)]

    async def count_messages(self, guild_id: int) -> int:
        return int(await self._pool.fetchval(COUNT_GUILD_MESSAGES, guild_id))

    async def count_vectors(self, guild_id: int, model: str) -> int:
        return int(await self._pool.fetchval(COUNT_GUILD_VECTORS, guild_id, model))

    # -- for the search engine ------------------------------------------------------------------------------

    async def fetch(self, sql: str, *params: Any) -> list[asyncpg.Record]:
        """Rows of one read statement (the PostgreSQL search path's queries, pg/search.py)."""
        return await self._pool.fetch(sql, *params)

    def acquire(self) -> Any:
        """A pooled connection for several statements in one transaction (``async with store.acquire() as c``)."""
        return self._pool.acquire()

    # -- guild settings and opt-outs ------------------------------------------------------------------------

    async def guild_settings(self, guild_id: int) -> dict[str, Any]:
        value = await self._pool.fetchval(SELECT_SETTINGS, guild_id)
        return json.loads(value) if value else {}

    async def set_guild_setting(self, guild_id: int, key: str, value: Any) -> None:
        """Set one JSON-serialisable setting; ``None`` removes the key."""
        async with self._pool.acquire() as conn, conn.transaction():
            if value is None:
                await conn.execute(REMOVE_SETTING, guild_id, key)
            else:
                await conn.execute(MERGE_SETTING, guild_id, key, json.dumps(value))
            await conn.execute(DELETE_EMPTY_SETTINGS, guild_id)

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        await self._pool.execute(INSERT_OPT_OUT if opted_out else DELETE_OPT_OUT, guild_id, user_id)

    async def opt_outs(self) -> set[tuple[int, int]]:
        """Every (guild_id, user_id) that opted out; small, so callers cache it."""
        return {(row[0], row[1]) for row in await self._pool.fetch(SELECT_OPT_OUTS)}

    # -- the erasure ledger (erasures.py) --------------------------------------------------------------------

    async def erasures(self) -> dict[str, str]:
        """Id → entry (JSON) of every erasure this database has applied, by any process."""
        return {row[0]: row[1] for row in await self._pool.fetch(SELECT_ERASURES)}

    async def record_erasure(self, erasure_id: str, at: float, entry: str) -> None:
        """Note an erasure as applied to this database."""
        await self._pool.execute(INSERT_ERASURE, erasure_id, at, entry)


def _message_params(row: NewRow) -> tuple[Any, ...]:
    return (*row.values(), fts.words(row.fts_body), fts.words(row.record.author_name))
