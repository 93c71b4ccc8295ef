"""The erasure ledger's file: every forget, delete, opt-out or opt-in and capture switch, kept apart from the
database (an append-only file beside it, ids and times only, never message content), so that restoring an older
database, or a PostgreSQL dump, cannot bring back what was erased after it was taken. This module is the file format
alone; privacy/known.py merges it with the database's own record (its ``erasures`` table) as memory opens and before
a restore, and privacy/erasures.py records each entry and applies again every one the database has not applied.

One JSON object per line, e.g. ``{"v":1,"id":"…","at":1764090000.5,"kind":"forget","guild":1,"channel":10,
"author":null,"messages":[],"since":0.0,"until":1764090000.5,"sum":"…"}``. ``sum`` is the first 16 hex digits of the
SHA-256 of the canonical JSON (sorted keys, no spaces) of the other fields, so a line a crash cut short, or a byte the
disk changed, is told from a whole entry and named by its line number; a line written before checksums (no ``sum``)
is read once and written again with one. Each append is fsynced before the erasure is done; a rewrite (after damage,
or to add checksums) goes through a temporary file, fsynced, renamed over the ledger, and the folder fsynced.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ("KINDS", "LEDGER_NAME", "DamagedLine", "Erasure", "ErasureLedger", "ErasureNotRecorded", "LedgerReading",
           "checksum", "damaged_path", "read_ledger", "rewrite_ledger", "why_not_written")

log = logging.getLogger(__name__)

LEDGER_NAME = "erasures.jsonl"
# Damaged lines a rewrite drops are kept here, as they were, for a person to read (ids and times only).
DAMAGED_SUFFIX = ".damaged"
VERSION = 1
SUM_DIGITS = 16
# forget: what history.Exclusion says (a guild, a channel and its threads, a member, one message; ``since`` to
# ``until``); deleted: messages deleted on Discord; opt_out / opt_in: a member of a guild; capture_off / capture_on:
# a channel's capture switched at ``at``.
KINDS = frozenset({"forget", "deleted", "opt_out", "opt_in", "capture_off", "capture_on"})

_REASONS = {errno.ENOSPC: "the disk is full", errno.EROFS: "the file system is read-only",
            errno.EACCES: "permission denied", errno.EPERM: "permission denied"}
if hasattr(errno, "EDQUOT"):  # not on Windows
    _REASONS[errno.EDQUOT] = "the disk quota is used up"


def why_not_written(error: OSError) -> str:
    """Why a write failed, in a few words: "the disk is full", "permission denied"..."""
    return _REASONS.get(error.errno or 0, error.strerror or type(error).__name__)


def damaged_path(path: Path) -> Path:
    """Where damaged lines of the ledger at ``path`` are kept once a rewrite drops them."""
    return path.with_name(path.name + DAMAGED_SUFFIX)


def checksum(fields: Mapping[str, Any]) -> str:
    """The first ``SUM_DIGITS`` hex digits of the SHA-256 of ``fields`` as canonical JSON."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:SUM_DIGITS]


class ChecksumMismatch(ValueError):
    """A line whose ``sum`` is not its fields' checksum: a byte changed on disk."""


class ErasureNotRecorded(RuntimeError):
    """The ledger could not be written (a full disk, a read-only file or file system), so the erasure was not done.

    ``reason`` says why in a few words ("the disk is full"); the message names the file too.
    """

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.reason = why_not_written(error)
        super().__init__(f"the erasure ledger {path} cannot be written ({self.reason})")


@dataclass(frozen=True, slots=True)
class Erasure:
    """One entry of the ledger: what was erased (``KINDS``) and when, by ids and times alone."""

    kind: str
    guild_id: int | None = None
    channel_id: int | None = None
    author_id: int | None = None
    message_ids: tuple[int, ...] = ()
    since: float = 0.0
    until: float | None = None
    at: float = 0.0
    id: str = ""

    @classmethod
    def new(cls, kind: str, **fields: Any) -> Erasure:
        """A new entry, stamped now with a fresh id (unique across processes sharing one PostgreSQL)."""
        return cls(kind, **fields, at=time.time(), id=uuid.uuid4().hex)

    def to_json(self) -> str:
        """One line of the ledger (no newline), its checksum last."""
        fields: dict[str, Any] = {"v": VERSION, "id": self.id, "at": self.at, "kind": self.kind,
                                  "guild": self.guild_id, "channel": self.channel_id, "author": self.author_id,
                                  "messages": list(self.message_ids), "since": self.since, "until": self.until}
        fields["sum"] = checksum(fields)
        return json.dumps(fields, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Erasure:
        """ValueError (or KeyError, TypeError) for a line that is not a whole entry, or whose checksum fails."""
        return _parsed(line)[0]


def _parsed(line: str) -> tuple[Erasure, bool]:
    """The entry of ``line``, and whether it carried a checksum (a line written before them does not)."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise TypeError("not a JSON object")
    given = data.pop("sum", None)
    if given is not None and given != checksum(data):
        raise ChecksumMismatch("checksum does not match")
    if data["kind"] not in KINDS or not data["id"]:
        raise ValueError(f"unknown erasure {data['kind']!r}")

    def optional(key: str) -> int | None:
        return None if data[key] is None else int(data[key])

    until = data["until"]
    erasure = Erasure(data["kind"], optional("guild"), optional("channel"), optional("author"),
                      tuple(int(m) for m in data["messages"]), float(data["since"]),
                      None if until is None else float(until), float(data["at"]), str(data["id"]))
    return erasure, given is not None


@dataclass(frozen=True, slots=True)
class DamagedLine:
    """A line of the ledger that is not a whole entry: its number (from 1), why, and its text as it was."""

    number: int
    why: str
    text: str


@dataclass(frozen=True, slots=True)
class LedgerReading:
    """What one read of the ledger found: its whole entries in file order, the damaged lines, how many entries were
    written before checksums, and whether the file was there at all."""

    entries: tuple[Erasure, ...] = ()
    damaged: tuple[DamagedLine, ...] = ()
    unsummed: int = 0
    missing: bool = False

    @property
    def clean(self) -> bool:
        """Nothing to write again: no damaged line, and every entry has its checksum."""
        return not self.damaged and not self.unsummed

    def damage(self) -> str:
        """The damaged lines in words, e.g. "line 3 (checksum does not match), line 9 (cut short)"."""
        return ", ".join(f"line {line.number} ({line.why})" for line in self.damaged)


def _why(error: Exception, last: bool) -> str:
    if last:  # no newline after it: the write a crash (or a full disk) cut short
        return "cut short"
    if isinstance(error, json.JSONDecodeError):
        return "not JSON"
    if isinstance(error, ChecksumMismatch):
        return "checksum does not match"
    return "not a whole entry"


def read_ledger(path: Path) -> LedgerReading:
    """Read and verify the ledger at ``path``; a missing file reads as empty (``missing``). Raises OSError when the
    file is there but cannot be read. Logs nothing: whoever acts on the reading says what it did."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return LedgerReading(missing=True)
    lines = data.decode("utf-8", errors="replace").split("\n")
    torn = lines.pop()  # "" when the file ends with a newline, as every whole append does
    entries: list[Erasure] = []
    damaged: list[DamagedLine] = []
    unsummed = 0
    for number, line in enumerate([*lines, torn] if torn else lines, start=1):
        if not line.strip():
            continue
        try:
            erasure, summed = _parsed(line)
        except (ValueError, KeyError, TypeError) as error:
            damaged.append(DamagedLine(number, _why(error, last=bool(torn) and number == len(lines) + 1), line))
            continue
        entries.append(erasure)
        unsummed += not summed
    return LedgerReading(tuple(entries), tuple(damaged), unsummed)


def _write_all(descriptor: int, data: bytes) -> None:
    """Write every byte of ``data`` (one ``os.write`` may write less). Tests make it fail as a full disk does."""
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _sync_folder(folder: Path) -> None:
    """fsync ``folder``, so a rename in it survives a power cut (POSIX; Windows cannot open a folder)."""
    if os.name != "posix":
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def rewrite_ledger(path: Path, entries: Iterable[Erasure], damaged: Iterable[DamagedLine] = ()) -> None:
    """Replace the ledger at ``path`` with ``entries`` (each with its checksum) in one step: a temporary file, fsynced,
    renamed over it, the folder fsynced; mode 0600. ``damaged`` lines are first appended, as they were, to the file
    beside it named with ``DAMAGED_SUFFIX``. Raises OSError (the ledger as it was) when it cannot be written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = "".join(line.text + "\n" for line in damaged)
    if kept:
        _append_text(damaged_path(path), kept)
    partial = path.with_name(path.name + ".part")
    try:
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            if hasattr(os, "fchmod"):  # a .part a crash left keeps its mode otherwise
                os.fchmod(descriptor, 0o600)
            _write_all(descriptor, "".join(erasure.to_json() + "\n" for erasure in entries).encode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` and fsync it. A write the disk cuts short is undone (the file is cut back to its
    size before), so a failed append leaves no torn line; after a torn line a crash left, ``text`` starts a new one."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            text = "\n" + text  # the last append was cut short: never glue an entry onto it
        try:
            _write_all(descriptor, text.encode())
            os.fsync(descriptor)
        except OSError:
            try:
                os.ftruncate(descriptor, size)
            except OSError:
                log.debug("Could not cut %s back after a failed append", path, exc_info=True)
            raise
    finally:
        os.close(descriptor)


class ErasureLedger:
    """The append-only file: each ``append`` is on disk (fsynced) before it returns, before the erasure is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def append(self, *erasures: Erasure) -> None:
        """Raises ErasureNotRecorded (the file as it was) when the ledger cannot be written."""
        if not erasures:
            return
        async with self._lock:
            try:
                await asyncio.to_thread(self._append, "".join(e.to_json() + "\n" for e in erasures))
            except OSError as error:
                raise ErasureNotRecorded(self.path, error) from error

    def _append(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _append_text(self.path, text)

    async def read(self) -> list[Erasure]:
        """Every whole entry, in file order (damaged lines left out: ``examine`` names them)."""
        return list((await self.examine()).entries)

    async def examine(self) -> LedgerReading:
        """Read and verify the file (``read_ledger``); OSError when it is there but cannot be read."""
        async with self._lock:
            return await asyncio.to_thread(read_ledger, self.path)

    async def rewrite(self, entries: Iterable[Erasure], damaged: Iterable[DamagedLine] = ()) -> None:
        """Replace the file with ``entries`` in one step (``rewrite_ledger``); OSError when it cannot be written."""
        async with self._lock:
            await asyncio.to_thread(rewrite_ledger, self.path, list(entries), list(damaged))
