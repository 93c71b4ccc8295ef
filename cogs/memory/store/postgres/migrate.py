"""A one-way copy of a SQLite memory into PostgreSQL: messages, one model's vectors, settings, opt-outs, tombstones,
and what reading history again must never store (history exclusions).

Rows keep their SQLite row ids, so a vector still names its message. The copy runs in pages, one transaction
each, and every insert skips what is already there: a copy cut short is finished by running it again. At the
end both sides are counted table by table; equal counts are the proof that everything arrived.

Run it before any bot process uses the PostgreSQL database: the copy moves the row-id sequence past the copied
ids, but a block a process took before that could collide with them (the counts would then differ).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np

from ...language import keywords as text
from . import fts
from .faults import reaching
from .schema import DIMENSION, apply_migrations
from .store import DOCUMENT, _prepare_connection

__all__ = ("PAGE", "CopyReport", "MigrationError", "TableCount", "copy_memory", "count_tables", "stored_models")

PAGE = 1000

# -- SQLite side (read only) -------------------------------------------------------------------------------
SQLITE_MESSAGES_PAGE = """
SELECT m.id, m.message_id, m.guild_id, m.channel_id, m.parent_channel_id, m.private_thread, m.author_id,
       m.author_name, m.author_is_bot, m.content, m.created_at, m.edited_at, m.reply_to_id, f.body
FROM messages AS m LEFT JOIN messages_fts AS f ON f.rowid = m.id
WHERE m.id > ? ORDER BY m.id LIMIT ?
"""
SQLITE_VECTORS_PAGE = """
SELECT message_rowid, vector FROM embeddings WHERE model = ? AND message_rowid > ? ORDER BY message_rowid LIMIT ?
"""
SQLITE_MAX_ROWID = "SELECT COALESCE(MAX(id), 0) FROM messages"
SQLITE_SETTINGS = "SELECT guild_id, settings FROM guild_settings ORDER BY guild_id"
SQLITE_OPT_OUTS = "SELECT guild_id, user_id FROM opt_outs ORDER BY guild_id, user_id"
SQLITE_TOMBSTONES = "SELECT message_id, deleted_at FROM message_tombstones ORDER BY message_id"
SQLITE_EXCLUSIONS = "SELECT guild_id, channel_id, author_id, message_id, since, until FROM history_exclusions"
# A memory last opened before the history ledger existed has no such table: nothing was excluded then.
SQLITE_HAS_EXCLUSIONS = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'history_exclusions'"
SQLITE_STORED_MODELS = "SELECT model, COUNT(*) FROM embeddings GROUP BY model ORDER BY model"
# The erasure ledger's entries the SQLite file has applied (erasures.py): copied so PostgreSQL's first start does
# not apply them all again; one the file lacks (a restored file never opened since) is applied there at start.
SQLITE_ERASURES = "SELECT id, at, entry FROM erasures"
SQLITE_HAS_ERASURES = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'erasures'"
# Guilds' and channels' names as last seen (store/sqlite/names.py); a memory last opened before them has none.
SQLITE_PLACE_NAMES = "SELECT guild_id, kind, id, name, parent_id, seen_at FROM place_names ORDER BY guild_id, kind, id"
SQLITE_HAS_PLACE_NAMES = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'place_names'"
# Counted per guild (tombstones name no guild: counted as a whole). A vector counts under its message's guild.
SQLITE_COUNTS = {
    "messages": ("SELECT guild_id, COUNT(*) FROM messages GROUP BY guild_id", False),
    "embeddings": ("SELECT m.guild_id, COUNT(*) FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid "
                   "WHERE e.model = ? GROUP BY m.guild_id", True),
    "guild_settings": ("SELECT guild_id, COUNT(*) FROM guild_settings GROUP BY guild_id", False),
    "opt_outs": ("SELECT guild_id, COUNT(*) FROM opt_outs GROUP BY guild_id", False),
    "message_tombstones": ("SELECT NULL, COUNT(*) FROM message_tombstones", False),
    "history_exclusions": ("SELECT guild_id, COUNT(*) FROM history_exclusions GROUP BY guild_id", False),
    "place_names": ("SELECT guild_id, COUNT(*) FROM place_names GROUP BY guild_id", False),
}
# Tables a later migration added (a SQLite file older than it has none to copy), with what reads and writes them:
# the quotation log (no key: a row already there is not written again), members' last exports, the dashboards'
# Performance minutes.
LATER_TABLES: dict[str, tuple[str, str]] = {
    "quotations": (
        "SELECT message_id, guild_id, author_id, channel_id, quoted_at, kind, answer_channel_id, answer_message_id "
        "FROM quotations ORDER BY quoted_at",
        """INSERT INTO quotations (message_id, guild_id, author_id, channel_id, quoted_at, kind, answer_channel_id,
                                   answer_message_id)
           SELECT $1::bigint, $2::bigint, $3::bigint, $4::bigint, $5::double precision, $6::text, $7::bigint,
                  $8::bigint
           WHERE NOT EXISTS (SELECT 1 FROM quotations WHERE message_id = $1 AND quoted_at = $5 AND kind = $6
                             AND answer_message_id IS NOT DISTINCT FROM $8)"""),
    "member_exports": ("SELECT guild_id, user_id, exported_at FROM member_exports",
                       "INSERT INTO member_exports (guild_id, user_id, exported_at) VALUES ($1, $2, $3) "
                       "ON CONFLICT DO NOTHING"),
    "performance_minutes": ("SELECT origin, minute, figures FROM performance_minutes",
                            "INSERT INTO performance_minutes (origin, minute, figures) VALUES ($1, $2, $3) "
                            "ON CONFLICT DO NOTHING"),
}
SQLITE_HAS_TABLE = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
SQLITE_COUNTS.update({
    "quotations": ("SELECT guild_id, COUNT(*) FROM quotations GROUP BY guild_id", False),
    "member_exports": ("SELECT guild_id, COUNT(*) FROM member_exports GROUP BY guild_id", False),
    "performance_minutes": ("SELECT NULL, COUNT(*) FROM performance_minutes", False),
})
SQLITE_TOTAL_MESSAGES = "SELECT COUNT(*) FROM messages"
SQLITE_TOTAL_VECTORS = "SELECT COUNT(*) FROM embeddings WHERE model = ?"

# -- PostgreSQL side -------------------------------------------------------------------------------------------
PG_EXISTING_MESSAGES = "SELECT id FROM messages WHERE id = ANY($1::bigint[])"
PG_INSERT_MESSAGE = f"""
INSERT INTO messages (id, message_id, guild_id, channel_id, parent_channel_id, private_thread, author_id,
                      author_name, author_is_bot, content, created_at, edited_at, reply_to_id, document)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, {DOCUMENT.format(body="$14", author="$15")})
ON CONFLICT DO NOTHING
"""
PG_EXISTING_VECTORS = "SELECT message_rowid FROM embeddings WHERE model = $1 AND message_rowid = ANY($2::bigint[])"
# Only for a message that arrived under this row id: a message stored under another id is a count mismatch.
PG_INSERT_VECTOR = """
INSERT INTO embeddings (message_rowid, model, vector) SELECT id, $2, $3 FROM messages WHERE id = $1
ON CONFLICT DO NOTHING
"""
PG_INSERT_SETTINGS = "INSERT INTO guild_settings (guild_id, settings) VALUES ($1, $2::jsonb) ON CONFLICT DO NOTHING"
PG_INSERT_OPT_OUT = "INSERT INTO opt_outs (guild_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
PG_INSERT_TOMBSTONE = "INSERT INTO message_tombstones (message_id, deleted_at) VALUES ($1, $2) ON CONFLICT DO NOTHING"
# No key to conflict on: a row the same in every column is already there (the ledger never writes two such rows).
PG_INSERT_EXCLUSION = """
INSERT INTO history_exclusions (guild_id, channel_id, author_id, message_id, since, until)
SELECT $1::bigint, $2::bigint, $3::bigint, $4::bigint, $5::double precision, $6::double precision
WHERE NOT EXISTS (
    SELECT 1 FROM history_exclusions WHERE guild_id IS NOT DISTINCT FROM $1 AND channel_id IS NOT DISTINCT FROM $2
        AND author_id IS NOT DISTINCT FROM $3 AND message_id IS NOT DISTINCT FROM $4 AND since = $5
        AND until IS NOT DISTINCT FROM $6)
"""
PG_INSERT_ERASURE = "INSERT INTO erasures (id, at, entry) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING"
# A name already there is newer (a bot on PostgreSQL saw it): it stays.
PG_INSERT_PLACE_NAME = """
INSERT INTO place_names (guild_id, kind, id, name, parent_id, seen_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT DO NOTHING
"""
# Later row-id blocks start past every copied id (setval never moves the sequence back here).
PG_ADVANCE_ROWIDS = """
SELECT setval('message_rowid_blocks', GREATEST($1::bigint, (SELECT last_value FROM message_rowid_blocks)))
"""
PG_BUMP_GENERATION = """
INSERT INTO index_generations (guild_id, model, generation) SELECT DISTINCT guild_id, $1, 1 FROM messages
ON CONFLICT (guild_id, model) DO UPDATE SET generation = index_generations.generation + 1
"""
# Copied messages without a vector for the model (none yet, or only another model's) wait for one, as ingest's do.
PG_MARK_WAITING = """
INSERT INTO pending_vectors (message_rowid, guild_id)
SELECT m.id, m.guild_id FROM messages AS m
WHERE NOT EXISTS (SELECT 1 FROM embeddings AS e WHERE e.message_rowid = m.id AND e.model = $1)
ON CONFLICT DO NOTHING
"""
PG_COUNTS = {
    "messages": "SELECT guild_id, COUNT(*) FROM messages GROUP BY guild_id",
    "embeddings": "SELECT m.guild_id, COUNT(*) FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid "
                  "WHERE e.model = $1 GROUP BY m.guild_id",
    "guild_settings": "SELECT guild_id, COUNT(*) FROM guild_settings GROUP BY guild_id",
    "opt_outs": "SELECT guild_id, COUNT(*) FROM opt_outs GROUP BY guild_id",
    "message_tombstones": "SELECT NULL::bigint, COUNT(*) FROM message_tombstones",
    "history_exclusions": "SELECT guild_id, COUNT(*) FROM history_exclusions GROUP BY guild_id",
    "place_names": "SELECT guild_id, COUNT(*) FROM place_names GROUP BY guild_id",
}
PG_COUNTS.update({
    "quotations": "SELECT guild_id, COUNT(*) FROM quotations GROUP BY guild_id",
    "member_exports": "SELECT guild_id, COUNT(*) FROM member_exports GROUP BY guild_id",
    "performance_minutes": "SELECT NULL::bigint, COUNT(*) FROM performance_minutes",
})
PG_WAITING = "SELECT COUNT(*) FROM pending_vectors WHERE rejected_at IS NULL"

# (table, rows done, rows in all, rows skipped because they were already there)
ProgressCallback = Callable[[str, int, int, int], None]


class MigrationError(Exception):
    """Something the admin can fix: a missing SQLite file, vectors of the wrong width."""


@dataclass(frozen=True, slots=True)
class TableCount:
    """One table's rows on each side, for one guild (``guild_id``), or in all (``guild_id`` None, ``whole``)."""

    table: str
    sqlite: int
    postgresql: int
    guild_id: int | None = None
    whole: bool = True

    @property
    def matches(self) -> bool:
        return self.sqlite == self.postgresql

    def difference(self, model: str) -> str:
        """This count's difference in words: what differs, where, and both numbers."""
        what = f"{self.table} ({model} vectors)" if self.table == "embeddings" else self.table
        where = "" if self.whole else f" of guild {self.guild_id}" if self.guild_id is not None else " of no guild"
        return f"{what}{where}: {self.sqlite} in SQLite, {self.postgresql} in PostgreSQL"


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What the copy left: each table's totals, every per-guild difference, and the copied messages still waiting for
    a vector of the model in PostgreSQL (embedded when memory opens there)."""

    model: str
    totals: list[TableCount]
    differences: list[TableCount]
    waiting: int

    @property
    def matches(self) -> bool:
        return not self.differences


def open_sqlite(path: Path) -> sqlite3.Connection:
    """The SQLite memory, read only: the copy never changes its source."""
    if not path.is_file():
        raise MigrationError(f"no SQLite memory at {path}")
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)


def _sqlite_rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    return conn.execute(sql, params).fetchall()


async def _sqlite(conn: sqlite3.Connection, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    return await asyncio.to_thread(_sqlite_rows, conn, sql, params)


def _message_params(row: tuple[Any, ...]) -> tuple[Any, ...]:
    (rowid, message_id, guild_id, channel_id, parent_id, private_thread, author_id, author_name, author_is_bot,
     content, created_at, edited_at, reply_to_id, body) = row
    indexed = body if body is not None else text.fts_document(content)
    return (rowid, message_id, guild_id, channel_id, parent_id, bool(private_thread), author_id, author_name,
            bool(author_is_bot), content, created_at, edited_at, reply_to_id, fts.words(indexed),
            fts.words(author_name))


def _vector(blob: bytes, model: str) -> np.ndarray:
    vector = np.frombuffer(blob, dtype="<f4")
    if vector.shape[0] != DIMENSION:
        raise MigrationError(f"vectors of {model!r} have {vector.shape[0]} dimensions; "
                             f"the PostgreSQL store holds {DIMENSION}")
    return vector


async def _total(conn: sqlite3.Connection, sql: str, *params: Any) -> int:
    [(count,)] = await _sqlite(conn, sql, *params)
    return int(count)


async def stored_models(sqlite_path: Path) -> dict[str, int]:
    """Every key the SQLite memory holds vectors under, with how many."""
    conn = await asyncio.to_thread(open_sqlite, sqlite_path)
    try:
        return dict(await _sqlite(conn, SQLITE_STORED_MODELS))
    finally:
        await asyncio.to_thread(conn.close)


async def _has_exclusions(conn: sqlite3.Connection) -> bool:
    [(tables,)] = await _sqlite(conn, SQLITE_HAS_EXCLUSIONS)
    return int(tables) > 0


async def _has_place_names(conn: sqlite3.Connection) -> bool:
    [(tables,)] = await _sqlite(conn, SQLITE_HAS_PLACE_NAMES)
    return int(tables) > 0


async def _has_table(conn: sqlite3.Connection, table: str) -> bool:
    [(tables,)] = await _sqlite(conn, SQLITE_HAS_TABLE, table)
    return int(tables) > 0


async def _copy_messages(source: sqlite3.Connection, target: asyncpg.Connection, progress: ProgressCallback) -> None:
    total, done, skipped, after = await _total(source, SQLITE_TOTAL_MESSAGES), 0, 0, 0
    while rows := await _sqlite(source, SQLITE_MESSAGES_PAGE, after, PAGE):
        after = rows[-1][0]
        async with target.transaction():
            present = {r[0] for r in await target.fetch(PG_EXISTING_MESSAGES, [row[0] for row in rows])}
            missing = [_message_params(row) for row in rows if row[0] not in present]
            if missing:
                await target.executemany(PG_INSERT_MESSAGE, missing)
        done, skipped = done + len(rows), skipped + len(present)
        progress("messages", done, total, skipped)


async def _copy_vectors(source: sqlite3.Connection, target: asyncpg.Connection, model: str,
                        progress: ProgressCallback) -> None:
    total, done, skipped, after = await _total(source, SQLITE_TOTAL_VECTORS, model), 0, 0, 0
    while rows := await _sqlite(source, SQLITE_VECTORS_PAGE, model, after, PAGE):
        after = rows[-1][0]
        async with target.transaction():
            present = {r[0] for r in await target.fetch(PG_EXISTING_VECTORS, model, [row[0] for row in rows])}
            missing = [(rowid, model, _vector(blob, model)) for rowid, blob in rows if rowid not in present]
            if missing:
                await target.executemany(PG_INSERT_VECTOR, missing)
        done, skipped = done + len(rows), skipped + len(present)
        progress("embeddings", done, total, skipped)
    await target.execute(PG_BUMP_GENERATION, model)


async def _copy_small(source: sqlite3.Connection, target: asyncpg.Connection, table: str, select: str,
                      insert: str, progress: ProgressCallback) -> None:
    """Settings, opt-outs, tombstones and names: small enough for one transaction (a tombstone is two numbers)."""
    rows = await _sqlite(source, select)
    async with target.transaction():
        if rows:
            await target.executemany(insert, rows)
    progress(table, len(rows), len(rows), 0)


async def copy_memory(sqlite_path: Path, url: str, model: str, progress: ProgressCallback) -> CopyReport:
    """Copy everything not yet in the PostgreSQL database (vectors: those stored under the key ``model``), then count
    both sides per table and guild."""
    source = await asyncio.to_thread(open_sqlite, sqlite_path)
    try:
        async with reaching(url):  # a lost server is one DatabaseUnavailableError; what was copied stays
            return await _copy(source, url, model, progress)
    finally:
        await asyncio.to_thread(source.close)


async def _copy(source: sqlite3.Connection, url: str, model: str, progress: ProgressCallback) -> CopyReport:
    target = await asyncpg.connect(url)
    try:
        await apply_migrations(target)
        await _prepare_connection(target)
        [(max_rowid,)] = await _sqlite(source, SQLITE_MAX_ROWID)
        await target.execute(PG_ADVANCE_ROWIDS, max_rowid)
        await _copy_messages(source, target, progress)
        await _copy_vectors(source, target, model, progress)
        await target.execute(PG_MARK_WAITING, model)
        await _copy_small(source, target, "guild_settings", SQLITE_SETTINGS, PG_INSERT_SETTINGS, progress)
        await _copy_small(source, target, "opt_outs", SQLITE_OPT_OUTS, PG_INSERT_OPT_OUT, progress)
        await _copy_small(source, target, "message_tombstones", SQLITE_TOMBSTONES, PG_INSERT_TOMBSTONE,
                          progress)
        if await _has_exclusions(source):
            await _copy_small(source, target, "history_exclusions", SQLITE_EXCLUSIONS, PG_INSERT_EXCLUSION,
                              progress)
        if await _has_place_names(source):
            await _copy_small(source, target, "place_names", SQLITE_PLACE_NAMES, PG_INSERT_PLACE_NAME, progress)
        for table, (select, insert) in LATER_TABLES.items():
            if await _has_table(source, table):
                await _copy_small(source, target, table, select, insert, progress)
        [(has_erasures,)] = await _sqlite(source, SQLITE_HAS_ERASURES)
        if has_erasures:
            await target.executemany(PG_INSERT_ERASURE, await _sqlite(source, SQLITE_ERASURES))
        return await count_tables(source, target, model)
    finally:
        await target.close()


async def _sqlite_counts(conn: sqlite3.Connection, table: str, model: str) -> dict[int | None, int]:
    if table == "history_exclusions" and not await _has_exclusions(conn):
        return {}
    if table == "place_names" and not await _has_place_names(conn):
        return {}
    if table in LATER_TABLES and not await _has_table(conn, table):
        return {}
    sql, takes_model = SQLITE_COUNTS[table]
    return dict(await _sqlite(conn, sql, *((model,) if takes_model else ())))


async def count_tables(source: sqlite3.Connection, target: asyncpg.Connection, model: str) -> CopyReport:
    """Both sides counted per table and per guild (vectors: under ``model``)."""
    totals: list[TableCount] = []
    differences: list[TableCount] = []
    for table, sql in PG_COUNTS.items():
        lite = await _sqlite_counts(source, table, model)
        pg = {row[0]: row[1] for row in await target.fetch(sql, *((model,) if "$1" in sql else ()))}
        totals.append(TableCount(table, sum(lite.values()), sum(pg.values())))
        whole = table in ("message_tombstones", "performance_minutes")
        for guild_id in sorted(lite.keys() | pg.keys(), key=lambda g: (g is not None, g or 0)):
            count = TableCount(table, lite.get(guild_id, 0), pg.get(guild_id, 0), guild_id, whole)
            if not count.matches:
                differences.append(count)
    return CopyReport(model, totals, differences, await target.fetchval(PG_WAITING))
