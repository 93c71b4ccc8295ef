"""The manifest written beside a model export (an ONNX folder): what it was made from and how, and each file's size,
modification time and SHA-256, so a truncated, damaged or stale export is found before it is loaded.

Hashing the whole 2.4 GB export of Qwen3-Reranker-0.6B costs seconds (``python -m bench.export_checksum``; figures in
docs/reranker.md), too much for every start. So a load checks each file's size, its modification time and a SHA-256
of sampled blocks (its first and last MiB and 33 blocks of 64 KiB spread evenly between: about 4 MiB read however
large the file); a file whose modification time changed (anything written to it) is hashed whole before it is
trusted. The whole hash is written at export and checked by ``python -m cogs.memory check``."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .private_files import open_private

__all__ = ("MANIFEST", "ExportDamage", "FileSums", "export_problem", "file_sums", "read_manifest", "write_manifest")

log = logging.getLogger(__name__)

MANIFEST = "export.json"
# The sampled hash: both ends, and evenly spaced blocks between (an odd count, so one sits on the middle).
EDGE_BYTES = 1 << 20
SAMPLE_BLOCKS = 33
SAMPLE_BYTES = 64 << 10
_CHUNK = 8 << 20


class ExportDamage(Exception):
    """An export's manifest cannot be read."""


@dataclass(frozen=True, slots=True)
class FileSums:
    """What a manifest records of one file."""

    size: int
    mtime_ns: int
    sha256: str
    sampled: str

    def as_json(self) -> dict[str, int | str]:
        return {"size": self.size, "mtime_ns": self.mtime_ns, "sha256": self.sha256, "sampled": self.sampled}

    @classmethod
    def from_json(cls, value: object) -> FileSums:
        if not isinstance(value, dict):
            raise ExportDamage(f"a file entry is {type(value).__name__}, not an object")
        try:
            return cls(int(value["size"]), int(value["mtime_ns"]), str(value["sha256"]), str(value["sampled"]))
        except (KeyError, TypeError, ValueError) as error:
            raise ExportDamage(f"a file entry lacks {error}") from None


def full_sha256(path: Path) -> str:
    """The SHA-256 of the whole file (hashlib lets go of the GIL while it hashes)."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sample_offsets(size: int) -> list[tuple[int, int]]:
    """(offset, length) of the sampled regions of a file of ``size`` bytes; the whole file when it is small."""
    if size <= 2 * EDGE_BYTES + SAMPLE_BLOCKS * SAMPLE_BYTES:
        return [(0, size)]
    spacing = (size - SAMPLE_BYTES) / (SAMPLE_BLOCKS - 1)
    blocks = [(round(i * spacing), SAMPLE_BYTES) for i in range(SAMPLE_BLOCKS)]
    return [(0, EDGE_BYTES), *blocks, (size - EDGE_BYTES, EDGE_BYTES)]


def sampled_sha256(path: Path) -> str:
    """A SHA-256 over the file's size and its sampled regions."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as file:
        for offset, length in _sample_offsets(size):
            file.seek(offset)
            digest.update(file.read(length))
    return digest.hexdigest()


def file_sums(path: Path) -> FileSums:
    status = path.stat()
    return FileSums(status.st_size, status.st_mtime_ns, full_sha256(path), sampled_sha256(path))


def write_manifest(folder: Path, fields: Mapping[str, object]) -> dict[str, Any]:
    """Hash every file in ``folder`` and write the manifest there (call it last, before the folder is published);
    returns what it wrote."""
    files = {path.name: file_sums(path).as_json() for path in sorted(folder.iterdir())
             if path.is_file() and path.name != MANIFEST}
    manifest = {**fields, "files": files}
    _write_json(folder / MANIFEST, manifest)
    return manifest


def _write_json(path: Path, manifest: Mapping[str, object]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open_private(temporary) as file:
        file.write((json.dumps(manifest, indent=2) + "\n").encode())
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest in ``folder``, or None when it has none; ExportDamage when it cannot be read."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise ExportDamage(f"its manifest {MANIFEST} is unreadable ({error})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ExportDamage(f"its manifest {MANIFEST} lists no files")
    return manifest


def _file_problem(path: Path, recorded: FileSums, full: bool) -> tuple[str | None, int | None]:
    """What is wrong with one file, and its new modification time where it changed and the file is whole."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return f"{path.name} is missing", None
    if status.st_size != recorded.size:
        return f"{path.name} is {status.st_size:,} bytes, the export wrote {recorded.size:,}", None
    touched = status.st_mtime_ns != recorded.mtime_ns
    try:
        if full or touched:
            if full_sha256(path) != recorded.sha256:
                return f"{path.name} does not match its SHA-256 (it changed since the export)", None
            return None, status.st_mtime_ns if touched else None
        if sampled_sha256(path) != recorded.sampled:
            return f"{path.name} does not match its checksum (it changed since the export)", None
    except OSError as error:  # removed or replaced meanwhile, or unreadable
        return f"{path.name} cannot be read ({error.strerror or error})", None
    return None, None


def export_problem(folder: Path, expected: Mapping[str, object] | None = None, *, full: bool = False) -> str | None:
    """Why the export in ``folder`` must not be used, in words that follow its name, or None when it is whole.

    ``expected``: the fields it must have been made with (model, revision, settings); ``full`` hashes every file
    whole (``check``), otherwise sampled blocks (a start). A file copied or touched since (its modification time
    changed) is hashed whole, and the new time recorded if its contents are unchanged."""
    if not folder.is_dir():
        return "is missing"
    try:
        manifest = read_manifest(folder)
        if manifest is None:
            return f"has no manifest ({MANIFEST}): an export cut short, or one written before exports had checksums"
        stale = sorted(key for key, value in (expected or {}).items() if manifest.get(key) != value)
        if stale:
            return f"was made with other {', '.join(stale)}"
        files = {name: FileSums.from_json(value) for name, value in manifest["files"].items()}
    except ExportDamage as error:
        return str(error)
    if not files:
        return f"its manifest {MANIFEST} lists no files"
    touched: dict[str, int] = {}
    for name, recorded in files.items():
        problem, mtime = _file_problem(folder / name, recorded, full)
        if problem is not None:
            return problem
        if mtime is not None:
            touched[name] = mtime
    if touched:
        _record_times(folder, manifest, touched)
    return None


def _record_times(folder: Path, manifest: dict[str, Any], touched: dict[str, int]) -> None:
    """The files were hashed whole and are as exported: record their new times, so the next start samples them."""
    for name, mtime in touched.items():
        manifest["files"][name]["mtime_ns"] = mtime
    with contextlib.suppress(OSError):  # a read-only folder: hashed whole again next time, nothing worse
        _write_json(folder / MANIFEST, manifest)
    log.info("ONNX export %s: %s hashed whole after their modification time changed; unchanged",
             folder, ", ".join(sorted(touched)))
