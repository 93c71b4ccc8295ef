"""The file a vector index is saved in: its format, written atomically (no temporary file left on failure), read
with checks, and every failure named in words an admin can act on (``why``, ``disk_nearly_full``: the stores' files
use them too)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..runtime.private_files import make_private_folder, open_private

__all__ = ("IndexFileError", "IndexMeta", "IndexSaveError", "disk_nearly_full", "read_index_file", "why",
           "write_atomically", "write_index_file")

# An .npz archive: "meta" (the JSON header below, as bytes) and the arrays the index is saved as ("index", a
# faiss.serialize_index blob, and for an HNSW graph its labels' row ids and live flags). Format 1 held IVF indexes.
_FORMAT = 2

# What an OSError means for a file the bot writes, in the words an admin acts on.
_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EFBIG: "the file is larger than this process may write",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EISDIR: "a folder is in the way",
    errno.ENOTDIR: "a file is in the way of a folder",
    errno.EEXIST: "a file is in the way of a folder",
}


@dataclass(frozen=True, slots=True)
class IndexMeta:
    """What a saved index says it holds; compared with SQLite's fingerprint on load."""

    model: str
    dimension: int
    count: int
    checksum: int
    generation: int


class IndexFileError(Exception):
    """A saved index could not be read (missing, truncated, corrupted, another format, or not a file at all)."""


class IndexSaveError(Exception):
    """An index could not be saved; the message says which and why. SQLite still holds every vector."""


def why(error: OSError) -> str:
    """``error`` in a few words and the path it concerns, e.g. "the disk is full (data/indexes/1.faiss.tmp)"."""
    reason = _REASONS.get(error.errno or 0, error.strerror or type(error).__name__)
    # A rename names its target second: that is where the folder in the way is.
    path = error.filename2 or error.filename
    return f"{reason} ({path})" if path else reason


# Below this much free space, a write there fails for want of room (SQLite needs 32 KiB for its -shm file alone).
NEARLY_FULL_BYTES = 1 << 20


def disk_nearly_full(path: Path) -> bool:
    """Whether the disk holding ``path`` has less than 1 MiB free: a write there fails for want of room."""
    try:
        return shutil.disk_usage(path.parent).free < NEARLY_FULL_BYTES
    except OSError:
        return False


def check_readable(path: Path) -> None:
    """Raise IndexFileError unless ``path`` is a regular file: a folder or a pipe there must not crash or block."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as exc:
        raise IndexFileError(f"{path} does not exist") from exc
    except OSError as exc:
        raise IndexFileError(f"{path} is unreadable: {why(exc)}") from exc
    if stat.S_ISDIR(mode):
        raise IndexFileError(f"{path} is a folder, not an index file")
    if not stat.S_ISREG(mode):
        raise IndexFileError(f"{path} is not a regular file")


def write_atomically(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """``write`` into ``path.tmp``, sync it, then rename it over ``path``: a crash leaves the old file or the new
    one, never half of one, and a failure (a full disk, a folder in the way) leaves no temporary file behind. The
    file is 0600 (a new folder 0700): it holds what members wrote."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        make_private_folder(path.parent)
        with open_private(temporary) as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise


def write_index_file(path: Path, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Save the ``arrays`` an index is made of with ``header`` (what it holds: model, count, checksum...)."""
    meta = np.frombuffer(json.dumps({"format": _FORMAT, **header}).encode(), dtype=np.uint8)
    # numpy 2's stub lets a keyword array stand for savez's allow_pickle flag; these are named index, label_ids, live.
    write_atomically(path, lambda file: np.savez(file, meta=meta, **arrays))  # type: ignore[arg-type]


def read_index_file(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The header and arrays saved at ``path``; IndexFileError if it is not a readable index file of this format."""
    check_readable(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["meta"].tobytes())
            if header.get("format") != _FORMAT:
                raise IndexFileError(f"{path} has format {header.get('format')!r}, expected {_FORMAT}")
            arrays = {name: data[name] for name in data.files if name != "meta"}
    except FileNotFoundError as exc:
        raise IndexFileError(f"{path} does not exist") from exc
    except (OSError, ValueError, KeyError, RuntimeError, EOFError, zipfile.BadZipFile) as exc:
        raise IndexFileError(f"{path} is unreadable: {type(exc).__name__}: {exc}") from exc
    return header, arrays
