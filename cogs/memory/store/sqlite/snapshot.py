"""One memory database copied whole: a consistent, checked, single-file copy written atomically (a backup, the
incoming copy of a restore), the check a file must pass to be restored, and the file-system steps both rely on."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ...runtime.private_files import open_private
from ...vectors.files import why
from .migrations import MIGRATIONS

__all__ = ("BackupError", "check_backup", "copy_atomically", "read_only", "reason", "remove", "stamp", "sync",
           "sync_folder")

COUNT_MESSAGES = "SELECT COUNT(*) FROM messages"
SELECT_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
SELECT_APPLIED = "SELECT name FROM schema_migrations"
QUICK_CHECK = "PRAGMA quick_check(1)"
# A copy is one self-contained file: no -wal or -shm beside it.
SINGLE_FILE = "PRAGMA journal_mode = DELETE"
_REQUIRED_TABLES = frozenset({"messages", "schema_migrations"})


class BackupError(RuntimeError):
    """A backup or restore could not be done; the message says why and what to do."""


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def reason(error: OSError | sqlite3.Error) -> str:
    if isinstance(error, OSError):
        return why(error)
    if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_FULL:
        return "the disk is full"
    return str(error)


def read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)


def sync(path: Path) -> None:
    """Flush ``path``'s bytes (or, for a folder, its entries: a rename in it) to the disk."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def sync_folder(path: Path) -> None:
    """Make the renames and removals in ``path``'s folder durable (a no-op where folders cannot be opened)."""
    with contextlib.suppress(PermissionError, IsADirectoryError):  # Windows opens no folder
        sync(path.parent)


def _copy(source: sqlite3.Connection, target: Path) -> int:
    """Copy ``source`` into the new file ``target`` and check the copy; returns how many messages it holds."""
    open_private(target).close()  # empty, 0600 (it holds every message): SQLite writes into it and keeps its mode
    copy = sqlite3.connect(target, isolation_level=None)
    try:
        # One step, so one consistent snapshot: the bot's writes go on meanwhile (WAL), whereas a copy in several
        # steps starts over after every write of another connection and might never finish.
        source.backup(copy, pages=-1)
        copy.execute(SINGLE_FILE)
        problem = copy.execute(QUICK_CHECK).fetchone()[0]
        if problem != "ok":
            raise BackupError(f"the copy in {target} failed its check ({problem})")
        count = int(copy.execute(COUNT_MESSAGES).fetchone()[0])
        return count
    finally:
        copy.close()


def copy_atomically(source: Path, target: Path, *, before_rename: Callable[[], None] | None = None) -> int:
    """Copy the database ``source`` to ``target`` through ``target.part``; on any failure nothing is left.

    ``before_rename`` runs once the whole copy is on disk, still under its ``.part`` name (a restore's kill point).
    """
    partial = target.with_name(target.name + ".part")
    try:
        connection = read_only(source)
        try:
            messages = _copy(connection, partial)
        finally:
            connection.close()
        sync(partial)
        if before_rename is not None:
            before_rename()
        os.replace(partial, target)
        return messages
    except BaseException:
        remove(partial)
        raise


def check_backup(source: Path) -> None:
    """Refuse anything but a sound memory database this version of the bot knows."""
    if not source.is_file():
        raise BackupError(f"{source} is not a file")
    try:
        connection = read_only(source)
        try:
            tables = {row[0] for row in connection.execute(SELECT_TABLES)}
            if not _REQUIRED_TABLES <= tables:
                raise BackupError(f"{source} is not a memory database (it has no messages table)")
            unknown = {row[0] for row in connection.execute(SELECT_APPLIED)} - {m.name for m in MIGRATIONS}
            if unknown:
                raise BackupError(f"{source} comes from a newer version of the bot (migration "
                                  f"{', '.join(sorted(unknown))}); update the bot first")
            problem = connection.execute(QUICK_CHECK).fetchone()[0]
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{source} is not a readable SQLite database ({error})") from error
    if problem != "ok":
        raise BackupError(f"{source} is damaged ({problem}); choose another backup")
