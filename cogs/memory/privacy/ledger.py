"""The erasure ledger's file: every forget, delete, opt-out or opt-in and capture switch, kept apart from the
database (an append-only file beside it, ids and times only, never message content), so that restoring an older
database, or a PostgreSQL dump, cannot bring back what was erased after it was taken. This module is the file format
alone; privacy/erasures.py records each entry and applies again, as memory opens, every one the database has not
recorded as applied (its ``erasures`` table).

One JSON object per line, e.g. ``{"v": 1, "id": "…", "at": 1764090000.5, "kind": "forget", "guild": 1,
"channel": 10, "author": null, "messages": [], "since": 0.0, "until": 1764090000.5}``. A line a crash cut short is
skipped with one warning; appending after it starts a new line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ("KINDS", "LEDGER_NAME", "Erasure", "ErasureLedger")

log = logging.getLogger(__name__)

LEDGER_NAME = "erasures.jsonl"
VERSION = 1
# forget: what history.Exclusion says (a guild, a channel and its threads, a member, one message; ``since`` to
# ``until``); deleted: messages deleted on Discord; opt_out / opt_in: a member of a guild; capture_off / capture_on:
# a channel's capture switched at ``at``.
KINDS = frozenset({"forget", "deleted", "opt_out", "opt_in", "capture_off", "capture_on"})


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
        return json.dumps({"v": VERSION, "id": self.id, "at": self.at, "kind": self.kind, "guild": self.guild_id,
                           "channel": self.channel_id, "author": self.author_id, "messages": list(self.message_ids),
                           "since": self.since, "until": self.until}, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> Erasure:
        """ValueError (or KeyError, TypeError) for a line that is not a whole entry."""
        data = json.loads(line)
        if data["kind"] not in KINDS or not data["id"]:
            raise ValueError(f"unknown erasure {data['kind']!r}")

        def optional(key: str) -> int | None:
            return None if data[key] is None else int(data[key])

        until = data["until"]
        return cls(data["kind"], optional("guild"), optional("channel"), optional("author"),
                   tuple(int(m) for m in data["messages"]), float(data["since"]),
                   None if until is None else float(until), float(data["at"]), str(data["id"]))


class ErasureLedger:
    """The append-only file: each ``append`` is on disk (fsynced) before it returns, before the erasure is done."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def append(self, *erasures: Erasure) -> None:
        if erasures:
            async with self._lock:
                await asyncio.to_thread(self._append, "".join(e.to_json() + "\n" for e in erasures))

    def _append(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(descriptor).st_size
            if size and os.pread(descriptor, 1, size - 1) != b"\n":
                text = "\n" + text  # the last append was cut short: never glue an entry onto it
            os.write(descriptor, text.encode())
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    async def read(self) -> list[Erasure]:
        """Every whole entry, in file order; lines that are not (a write cut short) are skipped with one warning."""
        return await asyncio.to_thread(self._read)

    def _read(self) -> list[Erasure]:
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        erasures: list[Erasure] = []
        unreadable = 0
        for line in lines:
            if not line.strip():
                continue
            try:
                erasures.append(Erasure.from_json(line))
            except (ValueError, KeyError, TypeError):
                unreadable += 1
        if unreadable:
            log.warning("Skipped %d unreadable line(s) of the erasure ledger %s (a write cut short by a crash?)",
                        unreadable, self.path)
        return erasures

