"""Memory's files are its owner's alone: made 0600 (folders 0700) as they are written, and older ones tightened as
memory opens. On a shared machine the database, backups, index files and exports hold members' messages.

POSIX only: elsewhere (Windows) a file's mode does not say who may read it, and nothing here changes anything."""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

__all__ = ("PRIVATE_FILE", "PRIVATE_FOLDER", "create_private_file", "make_private_folder", "open_private",
           "tighten", "tighten_memory_files")

log = logging.getLogger(__name__)

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700
# The group and other bits: a file or folder with any of them set is readable (or writable) by others.
_OTHERS = 0o077
_POSIX = os.name == "posix"


def make_private_folder(path: Path) -> None:
    """``mkdir -p path`` where every folder it makes is 0700; folders that exist keep their mode."""
    missing: list[Path] = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_FOLDER)
        except FileExistsError:  # made meanwhile by another thread or process
            if not folder.is_dir():
                raise
            continue
        if _POSIX:
            os.chmod(folder, PRIVATE_FOLDER)  # mkdir's mode passes through the umask; 0700 is what is meant
    if not path.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path))


def create_private_file(path: Path) -> None:
    """Create ``path`` empty and 0600 if it does not exist (a file SQLite then opens keeps that mode, and SQLite gives
    its -wal, -shm and -journal files the database's mode); an existing file is left as it is."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE)
    os.close(descriptor)


def open_private(path: Path) -> BinaryIO:
    """``path`` opened for writing from its start ("wb"), 0600 whether new or not."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    try:
        if _POSIX:
            os.fchmod(descriptor, PRIVATE_FILE)
        return os.fdopen(descriptor, "wb")
    except BaseException:
        os.close(descriptor)
        raise


def _tighten_one(path: Path) -> bool:
    """Drop ``path``'s group and other bits (0644 -> 0600, 0755 -> 0700); whether it had any. Links are not
    followed: what one points at is not memory's to change."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(mode) or not mode & _OTHERS or not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return False
    try:
        os.chmod(path, stat.S_IMODE(mode) & ~_OTHERS)
    except OSError as error:  # another user's file in memory's folder: said, and memory goes on
        log.warning("Could not make %s private (%s); chmod go-rwx it by hand", path, error)
        return False
    return True


def tighten(files: Iterable[Path], folders: Iterable[Path] = ()) -> int:
    """Make ``files`` and every folder in ``folders`` with all it holds (recursively) private; returns how many
    were readable by others before. Missing paths are skipped."""
    if not _POSIX:
        return 0
    changed = sum(_tighten_one(path) for path in files)
    for folder in folders:
        if not folder.is_dir() or folder.is_symlink():
            continue
        changed += _tighten_one(folder)
        for parent, names, file_names in os.walk(folder):
            changed += sum(_tighten_one(Path(parent, name)) for name in (*names, *file_names))
    return changed


# Besides the database's own (its name, then -wal, -shm, .lock, .replaced-<time>...): what memory keeps beside it.
INDEX_SUFFIXES = (".faiss", ".faiss.tmp")


def tighten_memory_files(db_path: Path, index_dir: Path, onnx_dir: Path, names: Iterable[str]) -> int:
    """Make memory's files private as it opens, and say how many were not (one INFO line); returns that count.

    Memory's files: in the database's folder, those named after the database or starting with one of ``names``
    (the spool, the erasure ledger, the profile choice); the ONNX exports' folder and all in it; the vector index
    files. A folder is memory's own, and made 0700, when memory names it: the exports' folder, and the index folder
    and the database's folder when the one holds the other (data/indexes in data/, as memory lays them out). Another
    folder given with ``--db`` or ``--index-dir`` keeps its mode.
    """
    data = db_path.parent
    prefixes = (db_path.name, *names)
    files = [path for path in _listed(data) if path.name.startswith(prefixes)]
    files += [path for path in _listed(index_dir) if path.name.endswith(INDEX_SUFFIXES)]
    folders = [onnx_dir]
    if index_dir.parent.resolve() == data.resolve():
        files.append(data)  # the folder itself; what else it holds is not memory's to judge
        folders.append(index_dir)
    changed = tighten(files, folders)
    if changed:
        log.info("Made %d of memory's files and folders private (0600, folders 0700): they were readable by other "
                 "users of this machine", changed)
    return changed


def _listed(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:  # missing, or not a folder
        return []
