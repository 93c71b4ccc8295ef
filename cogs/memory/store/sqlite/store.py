"""SqliteStore: the SQLite source of truth — messages, their FTS5 rows and embeddings, guild settings, opt-outs."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import numpy as np

from . import integrity
from . import purge
from .lock import DatabaseLock
from .filters import filter_clause
from .integrity import StoreOpenError
from .migrations import apply_migrations
from .channels import ChannelGuildsMixin
from .dashboard_rows import DashboardRowsMixin
from .members import MemberRecordsMixin
from .names import PlaceNamesMixin
from .pending import PendingVectorsMixin
from .readers import ReaderPool
from .restore_journal import recover_restore
from .snapshot import BackupError, reason
from ...records import SearchFilters
from ..rows import ChannelMessage, EditRow, NewRow, RowRef, WriteBatch, channel_pages, to_timestamp
from ...vectors.index import CHECKSUM_K, CHECKSUM_P
from .write import write_batch

# The row records are the store's vocabulary: its callers import them from here.
__all__ = ("ChannelMessage", "EditRow", "SqliteStore", "NewRow", "RowRef", "StoreOpenError", "WriteBatch",
           "to_timestamp")

T = TypeVar("T")

log = logging.getLogger(__name__)


PRAGMAS = (
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
    # A deleted row's bytes (and a freed page's) are overwritten with zeros instead of lingering in the file.
    "PRAGMA secure_delete = ON",
)
# How long a write waits for another process's lock (SQLite's busy handler) before it fails.
BUSY_TIMEOUT_MS = 5000
SELECT_MAX_ROWID = "SELECT COALESCE(MAX(id), 0) FROM messages"
SELECT_GENERATION = "SELECT generation FROM index_generations WHERE guild_id = ? AND model = ?"
SELECT_FINGERPRINT = f"""
SELECT COUNT(*), COALESCE(SUM((e.message_rowid * {CHECKSUM_K}) % {CHECKSUM_P}), 0)
FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid
WHERE m.guild_id = ? AND e.model = ?
"""
SELECT_EMBEDDINGS_PAGE = """
SELECT e.message_rowid, e.vector FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid
WHERE m.guild_id = ? AND e.model = ? AND e.message_rowid > ?
ORDER BY e.message_rowid LIMIT ?
"""
SELECT_GUILDS = "SELECT DISTINCT guild_id FROM messages"
COUNT_GUILD_MESSAGES = "SELECT COUNT(*) FROM messages WHERE guild_id = ?"
REF_COLUMNS = "id, message_id, guild_id, channel_id, created_at"
CHANNEL_COLUMNS = "id, message_id, guild_id, channel_id, author_name, content, created_at"
SELECT_PREVIOUS = f"""
SELECT {CHANNEL_COLUMNS} FROM messages
WHERE guild_id = ? AND channel_id = ? AND (created_at, message_id) < (?, ?)
ORDER BY created_at DESC, message_id DESC LIMIT 1
"""
SELECT_CHANNEL_PAGE = f"""
SELECT {CHANNEL_COLUMNS} FROM messages
WHERE guild_id = ? AND channel_id = ? AND (created_at, message_id) > (?, ?)
ORDER BY created_at, message_id LIMIT ?
"""
SELECT_CHANNELS = "SELECT DISTINCT channel_id FROM messages WHERE guild_id = ?"
SELECT_HAS_VECTOR = "SELECT 1 FROM embeddings WHERE model = ? AND message_rowid = ?"
SELECT_SETTINGS = "SELECT settings FROM guild_settings WHERE guild_id = ?"
UPSERT_SETTINGS = """
INSERT INTO guild_settings (guild_id, settings) VALUES (?, ?)
ON CONFLICT (guild_id) DO UPDATE SET settings = excluded.settings
"""
DELETE_SETTINGS = "DELETE FROM guild_settings WHERE guild_id = ?"
INSERT_OPT_OUT = "INSERT OR IGNORE INTO opt_outs (guild_id, user_id) VALUES (?, ?)"
DELETE_OPT_OUT = "DELETE FROM opt_outs WHERE guild_id = ? AND user_id = ?"
SELECT_OPT_OUTS = "SELECT guild_id, user_id FROM opt_outs"
SELECT_ERASURES = "SELECT id, entry FROM erasures"
INSERT_ERASURE = "INSERT OR IGNORE INTO erasures (id, at, entry) VALUES (?, ?, ?)"
PRUNE_TOMBSTONES = "DELETE FROM message_tombstones WHERE deleted_at < ?"
# Which of some ids are stored (0) and which were deleted (1): one query per ingest batch for both checks.
SELECT_KNOWN_IDS = """
SELECT message_id, 0 FROM messages WHERE message_id IN ({marks})
UNION ALL SELECT message_id, 1 FROM message_tombstones WHERE message_id IN ({marks})
"""

# SQLite's default limit on host parameters is 32766; stay well under it.
_CHUNK = 10_000


def _chunks(values: Sequence[Any], size: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class SqliteStore(PendingVectorsMixin, PlaceNamesMixin, MemberRecordsMixin, ChannelGuildsMixin, DashboardRowsMixin):
    """One long-lived aiosqlite connection; every write goes through one transaction per call.

    Searches read through ``read`` on a pool of read-only connections, so they never wait for a write.
    """

    def __init__(self, conn: aiosqlite.Connection, path: Path, lock: DatabaseLock) -> None:
        self._conn = conn
        self.path = path
        self._next_rowid = 1
        self._readers = ReaderPool(path)
        self._lock = lock
        # A setting is read, changed and written back: two changes to one guild at once must not lose either.
        self._settings_lock = asyncio.Lock()

    def local_file(self) -> Path:
        """The database file."""
        return self.path

    @classmethod
    async def open(cls, path: Path, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> SqliteStore:
        """Open (or create) the database: checked, migrated, its keyword index rebuilt if damaged.

        Raises StoreOpenError, whose message says what is wrong (a damaged database, a full disk, a folder in the
        way) and what to do. Holds the database's shared lock until ``close``, so a restore cannot replace it.
        ``busy_timeout_ms``: how long a write waits for another process's lock before it fails (and is retried).
        """
        try:  # a restore cut short is finished or undone first: never open an empty or half-swapped database
            recovered = await asyncio.to_thread(recover_restore, path)
        except (OSError, BackupError) as exc:
            raise StoreOpenError(f"a restore into {path} was cut short and could not be finished or undone: "
                                 f"{reason(exc) if isinstance(exc, OSError) else exc}") from exc
        if recovered is not None:
            log.warning("%s", recovered)
        lock = DatabaseLock(path)
        conn: aiosqlite.Connection | None = None
        try:
            await asyncio.to_thread(integrity.make_room_for, path)
            alone = await asyncio.to_thread(lock.shared)
            await asyncio.to_thread(integrity.check_before_open, path)
            # isolation_level=None: transactions are begun explicitly, so a batch is exactly one transaction.
            conn = await aiosqlite.connect(path, isolation_level=None)
            for pragma in PRAGMAS:
                await conn.execute(pragma)
            await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            await apply_migrations(conn)
            # Before anything reads the keyword index (a purge left pending rewrites it); only with the database to
            # itself, as the check holds the write lock for seconds, which another process's writes would wait out.
            if alone:
                await asyncio.to_thread(integrity.repair_fts, path)
            await purge.finish_on_open(conn, path)
            store = cls(conn, path, lock)
            # Row ids are never reused, so a FAISS id always means one message, even across a crash.
            store._next_rowid = (await store._fetchone(SELECT_MAX_ROWID))[0] + 1
        except BaseException as exc:
            if conn is not None:
                await conn.close()
            lock.release()
            if isinstance(exc, (OSError, sqlite3.Error)):
                raise StoreOpenError(integrity.explain_open_failure(path, exc)) from exc
            raise
        return store

    async def close(self) -> None:
        """Close the readers and the writer's connection, whatever failed before, and drop the shared lock."""
        try:
            await self._readers.close()
        finally:
            try:
                await self._conn.close()
            finally:
                self._lock.release()

    async def read(self, function: Callable[..., T], *args: Any) -> T:
        """``function(connection, *args)`` on a reader thread: several queries, one hop off the event loop."""
        return await self._readers.run(function, *args)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """One statement on the writer's connection, committed on its own; call it between ingest writes (under
        ``IngestQueue.write_lock``), or it joins the batch being written."""
        await self._conn.execute(sql, params)

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = list(await self._conn.execute_fetchall(sql, params))
        return rows[0] if rows else None

    # -- writes ---------------------------------------------------------------------------------------------

    def allocate_rowids(self, count: int) -> range:
        """Row ids for new messages; the caller (the single ingest writer) inserts them with ``write``."""
        start = self._next_rowid
        self._next_rowid += count
        return range(start, start + count)

    async def reload_next_rowid(self) -> None:
        """Move past row ids another process took (a write of ours failed on one)."""
        row = await self._fetchone(SELECT_MAX_ROWID)
        self._next_rowid = max(self._next_rowid, row[0] + 1)

    async def write(self, batch: WriteBatch) -> None:
        """Apply one ingest step in a single transaction and bump the touched guilds' index generations."""
        await write_batch(self._conn, batch)

    async def purge_pending(self) -> bool:
        """Whether something forgotten may still be readable in the files (until ``erase_forgotten``)."""
        return await purge.pending(self._conn)

    async def erase_forgotten(self) -> bool:
        """Erase forgotten text from the database file and the WAL; False if a long read kept the WAL busy.

        Rewrites the whole FTS5 index where SQLite lacks FTS5 secure-delete: call it with the writer's lock held.
        """
        return await purge.erase(self._conn)

    # -- reads for ingest -----------------------------------------------------------------------------------

    async def known_message_ids(self, message_ids: Sequence[int]) -> tuple[set[int], set[int]]:
        """(stored, deleted): which of ``message_ids`` are stored, and which have a tombstone."""
        stored: set[int] = set()
        deleted: set[int] = set()
        for chunk in _chunks(message_ids, _CHUNK // 2):
            marks = ",".join("?" * len(chunk))
            rows = await self._conn.execute_fetchall(SELECT_KNOWN_IDS.format(marks=marks), [*chunk, *chunk])
            for message_id, is_tombstone in rows:
                (deleted if is_tombstone else stored).add(message_id)
        return stored, deleted

    async def prune_tombstones(self, before: float) -> int:
        """Forget tombstones of deletes older than ``before``; call it from the writer (between transactions)."""
        cursor = await self._conn.execute(PRUNE_TOMBSTONES, (before,))
        return cursor.rowcount

    async def refs_for_message_ids(self, message_ids: Sequence[int]) -> list[RowRef]:
        refs: list[RowRef] = []
        for chunk in _chunks(message_ids):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {REF_COLUMNS} FROM messages WHERE message_id IN ({marks})"
            refs.extend(RowRef(*row) for row in await self._conn.execute_fetchall(sql, chunk))
        return refs

    async def refs_for_channel(self, guild_id: int, channel_id: int) -> list[RowRef]:
        """A channel's messages and those of its threads."""
        sql = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = ? AND (channel_id = ? OR parent_channel_id = ?)"
        rows = await self._conn.execute_fetchall(sql, (guild_id, channel_id, channel_id))
        return [RowRef(*row) for row in rows]

    async def refs_for_guild(self, guild_id: int) -> list[RowRef]:
        sql = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = ?"
        return [RowRef(*row) for row in await self._conn.execute_fetchall(sql, (guild_id,))]

    async def refs_for_author(self, guild_id: int | None, author_id: int) -> list[RowRef]:
        params: tuple[int, ...]
        if guild_id is None:
            sql, params = f"SELECT {REF_COLUMNS} FROM messages WHERE author_id = ?", (author_id,)
        else:
            sql = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = ? AND author_id = ?"
            params = (guild_id, author_id)
        return [RowRef(*row) for row in await self._conn.execute_fetchall(sql, params)]

    async def refs_older_than(self, guild_id: int, cutoff: float) -> list[RowRef]:
        sql = f"SELECT {REF_COLUMNS} FROM messages WHERE guild_id = ? AND created_at < ?"
        return [RowRef(*row) for row in await self._conn.execute_fetchall(sql, (guild_id, cutoff))]

    async def message(self, message_id: int) -> ChannelMessage | None:
        sql = f"SELECT {CHANNEL_COLUMNS} FROM messages WHERE message_id = ?"
        row = await self._fetchone(sql, (message_id,))
        return ChannelMessage(*row) if row else None

    async def previous_in_channel(
        self, guild_id: int, channel_id: int, created_at: float, message_id: int
    ) -> ChannelMessage | None:
        row = await self._fetchone(SELECT_PREVIOUS, (guild_id, channel_id, created_at, message_id))
        return ChannelMessage(*row) if row else None

    async def iter_channel(self, guild_id: int, channel_id: int, page: int = 512) -> AsyncIterator[ChannelMessage]:
        """Every message of a channel in order, read in pages (keyset pagination)."""
        async def fetch_page(after: tuple[float, int], size: int) -> Sequence[Sequence[Any]]:
            return list(await self._conn.execute_fetchall(SELECT_CHANNEL_PAGE, (guild_id, channel_id, *after, size)))

        async for message in channel_pages(fetch_page, page):
            yield message

    async def channel_ids(self, guild_id: int) -> list[int]:
        return [row[0] for row in await self._conn.execute_fetchall(SELECT_CHANNELS, (guild_id,))]

    async def has_vector(self, rowid: int, model: str) -> bool:
        return await self._fetchone(SELECT_HAS_VECTOR, (model, rowid)) is not None

    # -- reads for the vector index -------------------------------------------------------------------------

    async def guild_ids(self) -> list[int]:
        return [row[0] for row in await self._conn.execute_fetchall(SELECT_GUILDS)]

    async def count_messages(self, guild_id: int) -> int:
        return int((await self._fetchone(COUNT_GUILD_MESSAGES, (guild_id,)))[0])

    async def index_fingerprint(self, guild_id: int, model: str) -> tuple[int, int, int]:
        """(vector count, id-set checksum, generation) of a guild's embeddings for ``model``."""
        count, checksum = await self._fetchone(SELECT_FINGERPRINT, (guild_id, model))
        generation = await self._fetchone(SELECT_GENERATION, (guild_id, model))
        return count, int(checksum), generation[0] if generation else 0

    async def index_generation(self, guild_id: int, model: str) -> int:
        row = await self._fetchone(SELECT_GENERATION, (guild_id, model))
        return row[0] if row else 0

    async def iter_embeddings(
        self, guild_id: int, model: str, page: int = 50_000
    ) -> AsyncIterator[tuple[np.ndarray, np.ndarray]]:
        """A guild's (row ids, vectors) in pages, so a million vectors never sit in memory as Python bytes."""
        after = 0
        while True:
            rows = list(await self._conn.execute_fetchall(SELECT_EMBEDDINGS_PAGE, (guild_id, model, after, page)))
            if not rows:
                return
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            vectors = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4").reshape(len(rows), -1)
            yield ids, vectors.astype(np.float32, copy=False)
            after = int(ids[-1])

    # -- reads for search -----------------------------------------------------------------------------------

    async def rowids_matching(self, filters: SearchFilters) -> np.ndarray:
        """Row ids of the guild's messages that pass ``filters`` (for restricting a vector search)."""
        return await self.read(_rowids_matching, filters)

    # -- guild settings and opt-outs ------------------------------------------------------------------------

    async def guild_settings(self, guild_id: int) -> dict[str, Any]:
        row = await self._fetchone(SELECT_SETTINGS, (guild_id,))
        return json.loads(row[0]) if row else {}

    async def set_guild_setting(self, guild_id: int, key: str, value: Any) -> None:
        """Set one JSON-serialisable setting; ``None`` removes the key."""
        async with self._settings_lock:
            settings = await self.guild_settings(guild_id)
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
            if settings:
                await self._conn.execute(UPSERT_SETTINGS, (guild_id, json.dumps(settings, sort_keys=True)))
            else:
                await self._conn.execute(DELETE_SETTINGS, (guild_id,))

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        await self._conn.execute(INSERT_OPT_OUT if opted_out else DELETE_OPT_OUT, (guild_id, user_id))

    async def opt_outs(self) -> set[tuple[int, int]]:
        """Every (guild_id, user_id) that opted out; small, so callers cache it."""
        return {(row[0], row[1]) for row in await self._conn.execute_fetchall(SELECT_OPT_OUTS)}

    # -- the erasure ledger (erasures.py) --------------------------------------------------------------------

    async def erasures(self) -> dict[str, str]:
        """Id → entry (JSON) of every erasure this database has applied."""
        return {row[0]: row[1] for row in await self._conn.execute_fetchall(SELECT_ERASURES)}

    async def record_erasure(self, erasure_id: str, at: float, entry: str) -> None:
        """Note an erasure as applied to this database (call with the ingest write lock held)."""
        await self._conn.execute(INSERT_ERASURE, (erasure_id, at, entry))


def _rowids_matching(connection: sqlite3.Connection, filters: SearchFilters) -> np.ndarray:
    where, params = filter_clause(filters)
    rows = connection.execute(f"SELECT id FROM messages AS m WHERE {where}", params).fetchall()
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
