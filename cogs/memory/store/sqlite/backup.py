"""Backups of the memory database through SQLite's online backup API, and restoring one while memory is stopped.

Only the database is copied: it is the source of truth, and the vector indexes are rebuilt from it on start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .lock import DatabaseInUse, DatabaseLock
from ...runtime.private_files import PRIVATE_FILE, make_private_folder, open_private
from ...vectors.files import why
from .migrations import MIGRATIONS
from .purge import CHECKPOINT_TRUNCATE, CLEAR_PURGE_PENDING, FTS_OPTIMIZE, SELECT_PURGE_PENDING

__all__ = ("Backup", "BackupError", "Restore", "backup_database", "restore_database")

log = logging.getLogger(__name__)

COUNT_MESSAGES = "SELECT COUNT(*) FROM messages"
SELECT_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table'"
SELECT_APPLIED = "SELECT name FROM schema_migrations"
QUICK_CHECK = "PRAGMA quick_check(1)"
HAS_PURGE_TABLE = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'pending_purge'"
# A backup is one self-contained file: no -wal or -shm beside it.
SINGLE_FILE = "PRAGMA journal_mode = DELETE"
_REQUIRED_TABLES = frozenset({"messages", "schema_migrations"})
_SIDECARS = ("-wal", "-shm")


class BackupError(RuntimeError):
    """A backup or restore could not be done; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Backup:
    path: Path
    messages: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Restore:
    messages: int
    # Where the database the restore replaced is kept (None when there was none).
    replaced: Path | None


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S")


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _reason(error: OSError | sqlite3.Error) -> str:
    if isinstance(error, OSError):
        return why(error)
    if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_FULL:
        return "the disk is full"
    return str(error)


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)


def _copy(source: sqlite3.Connection, target: Path) -> int:
    """Copy ``source`` into the new file ``target`` (0600: it holds every message) and check the copy; returns how
    many messages it holds."""
    open_private(target).close()  # empty: SQLite writes a new database into it, and keeps its mode
    copy = sqlite3.connect(target, isolation_level=None)
    try:
        # One step, so one consistent snapshot: the bot's writes go on meanwhile (WAL), whereas a copy in several
        # steps starts over after every write of another connection and might never finish.
        source.backup(copy, pages=-1)
        copy.execute(SINGLE_FILE)
        problem = copy.execute(QUICK_CHECK).fetchone()[0]
        if problem != "ok":
            raise BackupError(f"the copy in {target} failed its check ({problem})")
        return copy.execute(COUNT_MESSAGES).fetchone()[0]
    finally:
        copy.close()


def _sync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _copy_atomically(source: Path, target: Path) -> int:
    """Copy the database ``source`` to ``target`` through ``target.part``; on any failure nothing is left."""
    partial = target.with_name(target.name + ".part")
    try:
        connection = _read_only(source)
        try:
            messages = _copy(connection, partial)
        finally:
            connection.close()
        _sync(partial)
        os.replace(partial, target)
        return messages
    except BaseException:
        _remove(partial)
        raise


def _names_a_folder(destination: Path | str) -> bool:
    """A path written with a trailing separator (``backups/``) means a folder, as it does to ``cp`` and ``rsync``;
    ``Path`` drops that separator, so it is read from the text as given."""
    separators = tuple(sep for sep in (os.sep, os.altsep) if sep)
    return (isinstance(destination, str) and destination.endswith(separators)) or Path(destination).is_dir()


def _dated_file(folder: Path) -> Path:
    """``memory-<UTC time>.sqlite3`` in ``folder``; a second backup within the same second gets ``-2``, ``-3``..."""
    stamp = _stamp()
    target = folder / f"memory-{stamp}.sqlite3"
    attempt = 1
    while target.exists():
        attempt += 1
        target = folder / f"memory-{stamp}-{attempt}.sqlite3"
    return target


def _destination_file(destination: Path | str) -> Path:
    """The file a backup goes to: a dated one in a folder (made if it is new), or the new file named."""
    try:
        if _names_a_folder(destination):
            folder = Path(destination)
            make_private_folder(folder)
            return _dated_file(folder)
        target = Path(destination)
        if target.exists():
            raise BackupError(f"{target} already exists; give a new file name or a folder")
        make_private_folder(target.parent)
        return target
    except OSError as error:
        raise BackupError(f"could not write {destination}: {_reason(error)}") from error


def backup_database(db_path: Path, destination: Path | str) -> Backup:
    """Copy the live database to ``destination``: a folder (an existing one, or any path written with a trailing
    ``/``, made if new) gets ``memory-<UTC time>.sqlite3``; any other path is the new file to write.

    Safe while the bot runs: the copy is one consistent snapshot and never holds up the bot's writes.
    """
    if not db_path.is_file():
        raise BackupError(f"there is no memory database at {db_path}")
    destination = _destination_file(destination)
    lock = DatabaseLock(db_path)
    lock.shared()  # no restore can replace the database during the copy
    try:
        messages = _copy_atomically(db_path, destination)
    except (OSError, sqlite3.Error) as error:
        raise BackupError(f"could not write {destination}: {_reason(error)}") from error
    finally:
        lock.release()
    log.info("Backed up %s to %s (%d messages)", db_path, destination, messages)
    return Backup(destination, messages, destination.stat().st_size)


def _check_backup(source: Path) -> None:
    """Refuse anything but a sound memory database this version of the bot knows."""
    if not source.is_file():
        raise BackupError(f"{source} is not a file")
    try:
        connection = _read_only(source)
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


def _erase_pending(db_path: Path) -> None:
    """Finish the purge a crash left pending in the database about to be set aside (purge.py): its WAL may still
    hold old page images of forgotten messages, which the kept copy must not carry."""
    connection = sqlite3.connect(db_path, isolation_level=None)
    try:
        connection.execute("PRAGMA secure_delete = ON")
        if connection.execute(HAS_PURGE_TABLE).fetchone()[0] and connection.execute(SELECT_PURGE_PENDING).fetchone():
            connection.execute(FTS_OPTIMIZE)
            connection.execute(CLEAR_PURGE_PENDING)
        connection.execute(CHECKPOINT_TRUNCATE)
    finally:
        connection.close()


def _move_aside(db_path: Path) -> Path | None:
    """Keep the current database, and the write-ahead log that belongs to it, beside it under a dated name, once
    what a crash left of forgotten messages in it is erased."""
    if not db_path.exists():
        return None
    _erase_pending(db_path)
    aside = db_path.with_name(f"{db_path.name}.replaced-{_stamp()}")
    os.replace(db_path, aside)
    kept = [aside]
    for suffix in _SIDECARS:
        sidecar = db_path.with_name(db_path.name + suffix)
        if sidecar.exists():
            os.replace(sidecar, aside.with_name(aside.name + suffix))
            kept.append(aside.with_name(aside.name + suffix))
    if os.name == "posix":  # a database older than private files was 0644: the copy kept aside is not
        for path in kept:
            os.chmod(path, PRIVATE_FILE)
    return aside


def _remove_indexes(index_dir: Path) -> None:
    """The vector index files describe the replaced database: remove them, so the next start rebuilds them.

    One left behind is still caught on start (its fingerprint no longer matches the database), so a failure here
    is only logged.
    """
    if not index_dir.is_dir():
        return
    for path in index_dir.iterdir():
        if path.name.endswith((".faiss", ".faiss.tmp")) and path.is_file():
            try:
                path.unlink()
            except OSError as error:
                log.warning("Could not remove the vector index %s: %s", path, why(error))


def restore_database(source: Path, db_path: Path, index_dir: Path) -> Restore:
    """Make the backup ``source`` the memory database; the bot and every other ``python -m cogs.memory`` must be
    stopped (they hold its lock). The replaced database is kept beside it; the vector indexes rebuild on start.

    What was erased after the backup was taken (the erasure ledger, erasures.py) is applied again as memory next
    opens, before anything reads it: ``python -m cogs.memory reapply-erasures`` does that at once.
    """
    _check_backup(source)
    make_private_folder(db_path.parent)
    lock = DatabaseLock(db_path)
    try:
        lock.exclusive()
    except DatabaseInUse:
        raise BackupError(f"{db_path} is in use (the bot or another `python -m cogs.memory` has it open); "
                          "stop it, then restore") from None
    try:
        incoming = db_path.with_name(db_path.name + ".restoring")
        try:
            messages = _copy_atomically(source, incoming)
            replaced = _move_aside(db_path)
            os.replace(incoming, db_path)
        except (OSError, sqlite3.Error) as error:
            _remove(incoming)
            raise BackupError(f"could not restore {source} into {db_path}: {_reason(error)}") from error
        _remove_indexes(index_dir)
    finally:
        lock.release()
    log.info("Restored %s into %s (%d messages)", source, db_path, messages)
    return Restore(messages, replaced)
