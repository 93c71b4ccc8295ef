"""Restoring a backup while memory is stopped: the backup becomes the database, what was erased since it was taken
stays erased, and the database it replaces leaves the data folder. Every step is journaled (restore_journal.py), so
a restore cut short is finished or undone as memory next opens."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .lock import DatabaseInUse, DatabaseLock
from .purge import CHECKPOINT_TRUNCATE, CLEAR_PURGE_PENDING, FTS_OPTIMIZE, SELECT_PURGE_PENDING
from .restore_erasures import hold_erasures
from .restore_journal import RestoreJournal, finish, incoming_path, reached, recover_locked, undo, write_journal
from .snapshot import SINGLE_FILE, BackupError, check_backup, copy_atomically, reason, stamp, sync

__all__ = ("KnownErasures", "Restore", "kept_folder", "restore_database")

log = logging.getLogger(__name__)

HAS_PURGE_TABLE = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'pending_purge'"
_SIDECARS = ("-wal", "-shm")
KEPT_FOLDER = "backups"

# Given the database about to be replaced (it may not exist): every erasure a surviving record knows, id -> ledger
# entry, once the erasure ledger holds them all (privacy/known.py builds it; the store cannot read the ledger).
KnownErasures = Callable[[Path], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class Restore:
    messages: int
    # Where the database the restore replaced is kept (None when there was none, or it was deleted).
    replaced: Path | None
    # Erasures the backup had not applied, held in the restored file for memory to apply as it next opens.
    erasures: int = 0
    # Why the replaced database is still in the data folder (moving it out failed; the next start tries again).
    left_behind: str | None = None


def kept_folder(db_path: Path) -> Path:
    """Where a replaced database is kept unless the admin names a folder: ``backups/`` beside the data folder."""
    return db_path.resolve().parent.parent / KEPT_FOLDER


def _kept_file(folder: Path, db_path: Path, now: str) -> Path:
    """A new ``memory-replaced-<UTC time>.sqlite3`` in ``folder`` (made 0700 if new), which must lie outside the data
    folder: a copy there would keep what is erased later out of the erasures' reach."""
    data = db_path.resolve().parent
    resolved = folder.resolve()
    if resolved == data or data in resolved.parents:
        raise BackupError(f"{folder} is inside the data folder {data}: the replaced database must be kept outside it "
                          "(--keep-replaced DIR) or deleted (--discard-replaced)")
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise BackupError(f"could not make {folder} for the replaced database: {reason(error)}; name another folder "
                          "with --keep-replaced DIR, or --discard-replaced") from error
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BackupError(f"{folder} cannot be written to; name another folder with --keep-replaced DIR, or "
                          "--discard-replaced")
    target = folder / f"memory-replaced-{now}.sqlite3"
    attempt = 1
    while target.exists():
        attempt += 1
        target = folder / f"memory-replaced-{now}-{attempt}.sqlite3"
    return target


def _plan(source: Path, db_path: Path, index_dir: Path, keep_in: Path | None, discard: bool) -> RestoreJournal:
    now = stamp()
    if not db_path.exists():
        return RestoreJournal("copying", source.resolve(), index_dir.resolve(), None, None)
    kept = None if discard else _kept_file(keep_in or kept_folder(db_path), db_path, now)
    return RestoreJournal("copying", source.resolve(), index_dir.resolve(), f"{db_path.name}.replaced-{now}", kept)


def _prepare_replaced(db_path: Path) -> None:
    """Make the database about to be replaced one self-contained file, as a backup is: first finish the purge a crash
    left pending (purge.py), as its WAL may still hold old page images of forgotten messages, then leave WAL mode."""
    connection = sqlite3.connect(db_path, isolation_level=None)
    try:
        connection.execute("PRAGMA secure_delete = ON")
        if connection.execute(HAS_PURGE_TABLE).fetchone()[0] and connection.execute(SELECT_PURGE_PENDING).fetchone():
            connection.execute(FTS_OPTIMIZE)
            connection.execute(CLEAR_PURGE_PENDING)
        connection.execute(CHECKPOINT_TRUNCATE)
        mode = connection.execute(SINGLE_FILE).fetchone()[0]
    finally:
        connection.close()
    left = [db_path.name + suffix for suffix in _SIDECARS if db_path.with_name(db_path.name + suffix).exists()]
    if mode != "delete" or left:
        raise BackupError(f"could not make {db_path} one file before setting it aside (journal mode {mode}; "
                          f"{', '.join(left) or 'no'} files beside it)")


def _copy_in(journal: RestoreJournal, db_path: Path, erasures: KnownErasures | None) -> tuple[RestoreJournal, int]:
    """Everything before the point of no return (nothing live moves); returns the journal at ``swapping`` and how
    many erasures the restored file holds to apply."""
    incoming = incoming_path(db_path)
    messages = copy_atomically(journal.source, incoming, before_rename=lambda: reached("copying"))
    reached("copied")
    held = hold_erasures(incoming, erasures(db_path)) if erasures is not None else 0
    sync(incoming)
    if journal.replaced_name is not None:
        _prepare_replaced(db_path)
    swapping = journal.at("swapping", messages=messages)
    write_journal(db_path, swapping)
    reached("held")
    return swapping, held


def restore_database(source: Path, db_path: Path, index_dir: Path, *, keep_replaced_in: Path | None = None,
                     discard_replaced: bool = False, erasures: KnownErasures | None = None) -> Restore:
    """Make the backup ``source`` the memory database; the bot and every other ``python -m cogs.memory`` must be
    stopped (they hold its lock).

    ``erasures`` (privacy/known.py) is every erasure the ledger or the database being replaced knows: those the
    backup has not applied are written into the restored file, and memory applies them as it next opens, before
    anything reads it. The replaced database is moved to ``keep_replaced_in`` (default ``backups/`` beside the data
    folder; 0600 in a 0700 folder), or deleted with ``discard_replaced``; the vector indexes rebuild on start.
    """
    check_backup(source)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    lock = DatabaseLock(db_path)
    try:
        lock.exclusive()
    except DatabaseInUse:
        raise BackupError(f"{db_path} is in use (the bot or another `python -m cogs.memory` has it open); "
                          "stop it, then restore") from None
    try:
        line = recover_locked(db_path)
        if line is not None:
            log.warning("%s", line)
        journal = _plan(source, db_path, index_dir, keep_replaced_in, discard_replaced)
        try:
            write_journal(db_path, journal)
            reached("journal-written")
            journal, held = _copy_in(journal, db_path, erasures)
        except BaseException as error:
            undo(db_path, journal)
            if isinstance(error, (OSError, sqlite3.Error)):
                raise BackupError(f"could not restore {source} into {db_path}: {reason(error)}") from error
            raise
        try:
            finished = finish(db_path, journal)
        except OSError as error:
            raise BackupError(f"the restore of {source} stopped part-way ({reason(error)}); the next start of memory "
                              "finishes it") from error
    finally:
        lock.release()
    log.info("Restored %s into %s (%d messages, %d erasures to apply as memory opens)", source, db_path,
             journal.messages, held)
    return Restore(journal.messages, finished.kept, held, finished.left_behind)
