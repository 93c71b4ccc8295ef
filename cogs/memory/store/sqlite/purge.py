"""Forgetting for good: after a forget, erase the forgotten text from the bytes of the database files, soon.

A deleted row stays readable in SQLite's files in three places: the freed space of its pages (``PRAGMA
secure_delete`` zeroes it; the store turns it on), the FTS5 index (a delete only appends delete markers, which
carry the deleted terms too, and keeps the old segments until they happen to be merged), and the old page images
in the WAL. A forget marks a purge pending in its own transaction; the purge rewrites the FTS5 index without the
deleted entries, truncates the WAL, then clears the mark. A mark left by a crash is purged when the store opens.
When a purge runs is the privacy package's (privacy/purge_schedule.py), for either store.
"""

from __future__ import annotations

import logging
import sqlite3
import time

import aiosqlite

__all__ = ("FTS_SECURE_DELETE", "MARK_PURGE_PENDING", "erase", "finish_on_open", "pending", "prepare")

log = logging.getLogger(__name__)

# FTS5's 'secure-delete' option (SQLite 3.42+) removes a deleted row's entries from the index segments at once, so
# a purge needs no rewrite of the index. It raises the table's format to version 5, which an older SQLite refuses
# to read: a database opened once on 3.42+ stays on 3.42+.
FTS_SECURE_DELETE = sqlite3.sqlite_version_info >= (3, 42, 0)

# The single row of ``pending_purge``: present while something forgotten may still be readable on disk.
MARK_PURGE_PENDING = "INSERT OR IGNORE INTO pending_purge (id, since) VALUES (1, ?)"
SELECT_PURGE_PENDING = "SELECT since FROM pending_purge WHERE id = 1"
CLEAR_PURGE_PENDING = "DELETE FROM pending_purge"
# Rewrites every segment into one, leaving out deleted rows and the delete markers themselves.
FTS_OPTIMIZE = "INSERT INTO messages_fts (messages_fts) VALUES ('optimize')"
FTS_SECURE_DELETE_ON = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1)"
SELECT_FTS_SECURE_DELETE = "SELECT v FROM messages_fts_config WHERE k = 'secure-delete'"
# Copies the WAL into the database file, then cuts the WAL to zero bytes. It waits (busy_timeout) for readers that
# still hold a snapshot in the WAL, and answers busy = 1 if one outlasts the wait.
CHECKPOINT_TRUNCATE = "PRAGMA wal_checkpoint(TRUNCATE)"
# A search holds its snapshot for milliseconds; a reader that outlasts this many busy waits is retried later.
CHECKPOINT_ATTEMPTS = 3

async def prepare(conn: aiosqlite.Connection) -> None:
    """Turn FTS5 secure-delete on where SQLite has it; the first time, one purge erases what older deletes left."""
    if not FTS_SECURE_DELETE:
        return
    rows = list(await conn.execute_fetchall(SELECT_FTS_SECURE_DELETE))
    if rows and rows[0][0]:
        return
    await conn.execute("BEGIN IMMEDIATE")
    try:
        await conn.execute(FTS_SECURE_DELETE_ON)
        await conn.execute(FTS_OPTIMIZE)
        await conn.execute(MARK_PURGE_PENDING, (time.time(),))
    except BaseException:
        await conn.rollback()
        raise
    await conn.commit()
    log.info("FTS5 secure-delete is on: deleted messages leave the keyword index at once")


async def pending(conn: aiosqlite.Connection) -> bool:
    return bool(await conn.execute_fetchall(SELECT_PURGE_PENDING))


async def erase(conn: aiosqlite.Connection) -> bool:
    """Erase every forgotten row's bytes from the database file and the WAL; False if a reader kept the WAL busy.

    Call it from the writer, between transactions. The pending mark is cleared only once the WAL is truncated, so a
    crash or a busy reader leaves it for the next try.
    """
    started = time.perf_counter()
    if not FTS_SECURE_DELETE:
        await conn.execute("BEGIN IMMEDIATE")
        try:
            await conn.execute(FTS_OPTIMIZE)
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()
    rewritten = time.perf_counter()
    for _ in range(CHECKPOINT_ATTEMPTS):
        [(busy, _, _)] = await conn.execute_fetchall(CHECKPOINT_TRUNCATE)
        if not busy:
            break
    else:
        log.warning("A reader kept the WAL busy; forgotten messages stay in it until the next purge")
        return False
    # Writes only the mark's own page (zeroed by secure_delete) to the new, empty WAL.
    await conn.execute(CLEAR_PURGE_PENDING)
    log.debug("Forgotten messages erased from disk: FTS5 index rewritten in %.2f s, WAL truncated in %.2f s",
             rewritten - started, time.perf_counter() - rewritten)
    return True


async def finish_on_open(conn: aiosqlite.Connection, path: object) -> None:
    """Prepare, and finish a purge a crash left pending. It writes, so it must not stop a start on a full or busy
    disk: the pending mark then stays, and the next purge (at the latest as memory closes) erases it."""
    try:
        await prepare(conn)
        if await pending(conn):
            log.info("Erasing messages forgotten before the last stop from %s", path)
            await erase(conn)
    except sqlite3.OperationalError as exc:
        log.warning("Could not erase forgotten messages from %s now (%s); the next purge does", path, exc)
