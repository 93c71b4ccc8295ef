"""Backups of the memory database through SQLite's online backup API, safe while the bot runs.

Only the database is copied: it is the source of truth, and the vector indexes are rebuilt from it on start.
Restoring one is restore.py's (re-exported here, where callers have always found it).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from .lock import DatabaseLock
from ...runtime.private_files import make_private_folder
from .restore import Restore, restore_database
from .restore_journal import recover_restore
from .snapshot import BackupError, copy_atomically, reason, stamp

__all__ = ("Backup", "BackupError", "Restore", "backup_database", "restore_database")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Backup:
    path: Path
    messages: int
    size_bytes: int


def _names_a_folder(destination: Path | str) -> bool:
    """A path written with a trailing separator (``backups/``) means a folder, as it does to ``cp`` and ``rsync``;
    ``Path`` drops that separator, so it is read from the text as given."""
    separators = tuple(sep for sep in (os.sep, os.altsep) if sep)
    return (isinstance(destination, str) and destination.endswith(separators)) or Path(destination).is_dir()


def _dated_file(folder: Path) -> Path:
    """``memory-<UTC time>.sqlite3`` in ``folder``; a second backup within the same second gets ``-2``, ``-3``..."""
    now = stamp()
    target = folder / f"memory-{now}.sqlite3"
    attempt = 1
    while target.exists():
        attempt += 1
        target = folder / f"memory-{now}-{attempt}.sqlite3"
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
        raise BackupError(f"could not write {destination}: {reason(error)}") from error


def backup_database(db_path: Path, destination: Path | str) -> Backup:
    """Copy the live database to ``destination``: a folder (an existing one, or any path written with a trailing
    ``/``, made if new) gets ``memory-<UTC time>.sqlite3``; any other path is the new file to write.

    Safe while the bot runs: the copy is one consistent snapshot and never holds up the bot's writes.
    """
    line = recover_restore(db_path)  # a restore cut short: the database to copy is the one it leaves
    if line is not None:
        log.warning("%s", line)
    if not db_path.is_file():
        raise BackupError(f"there is no memory database at {db_path}")
    destination = _destination_file(destination)
    lock = DatabaseLock(db_path)
    lock.shared()  # no restore can replace the database during the copy
    try:
        messages = copy_atomically(db_path, destination)
    except (OSError, sqlite3.Error) as error:
        raise BackupError(f"could not write {destination}: {reason(error)}") from error
    finally:
        lock.release()
    log.info("Backed up %s to %s (%d messages)", db_path, destination, messages)
    return Backup(destination, messages, destination.stat().st_size)
