"""The erasure ledger: every forget, delete, opt-out or opt-in and capture switch, kept apart from the database (an
append-only file beside it, ids and times only, never message content), so that restoring an older database, or a
PostgreSQL dump, cannot bring back what was erased after it was taken: memory applies again, as it opens, every
entry the database has not recorded as applied (its ``erasures`` table).

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
from typing import TYPE_CHECKING, Any

from ..store.history import Exclusion
from ..store.rows import RowRef

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("KINDS", "LEDGER_NAME", "Erasure", "ErasureLedger", "apply")

log = logging.getLogger(__name__)

LEDGER_NAME = "erasures.jsonl"
VERSION = 1
# forget: what history.Exclusion says (a guild, a channel and its threads, a member, one message; ``since`` to
# ``until``); deleted: messages deleted on Discord; opt_out / opt_in: a member of a guild; capture_off / capture_on:
# a channel's capture switched at ``at``.
KINDS = frozenset({"forget", "deleted", "opt_out", "opt_in", "capture_off", "capture_on"})


@dataclass(frozen=True, slots=True)
class Erasure:
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

    def exclusion(self) -> Exclusion:
        message_id = self.message_ids[0] if len(self.message_ids) == 1 else None
        return Exclusion(self.guild_id, self.channel_id, self.author_id, message_id, self.since, self.until)

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


def _span(refs: list[RowRef], since: float, until: float | None, channel_id: int | None = None) -> list[RowRef]:
    """The refs created from ``since`` to ``until``, in ``channel_id`` where one is given."""
    return [ref for ref in refs if since <= ref.created_at and (until is None or ref.created_at <= until)
            and (channel_id is None or ref.channel_id == channel_id)]


async def _forget(memory: Memory, erasure: Erasure) -> int:
    store, ingest, since, until = memory.store, memory.ingest, erasure.since, erasure.until
    await memory.history.exclude(erasure.exclusion())
    if erasure.message_ids:
        return await ingest.delete(list(erasure.message_ids))
    guild_id, channel_id, author_id = erasure.guild_id, erasure.channel_id, erasure.author_id
    if author_id is not None:  # a member (in one channel): as ``IngestQueue.delete_author`` picks them
        return await ingest.erase(lambda: _refs_for_author(memory, guild_id, author_id, since, until, channel_id))
    assert guild_id is not None
    await memory.history.forget(guild_id, channel_id)
    if await memory.names.forget(guild_id, channel_id):  # a forgotten place leaves no name behind either
        memory.purges.soon()
    if channel_id is not None:  # the channel and its threads
        return await ingest.erase(lambda: _in_channel(memory, guild_id, channel_id, since, until))
    return await ingest.erase(lambda: _refs_for_guild(memory, guild_id, since, until))


async def _refs_for_author(memory: Memory, guild_id: int | None, author_id: int, since: float, until: float | None,
                           channel_id: int | None) -> list[RowRef]:
    return _span(await memory.store.refs_for_author(guild_id, author_id), since, until, channel_id)


async def _in_channel(memory: Memory, guild_id: int, channel_id: int, since: float,
                      until: float | None) -> list[RowRef]:
    return _span(await memory.store.refs_for_channel(guild_id, channel_id), since, until)


async def _refs_for_guild(memory: Memory, guild_id: int, since: float, until: float | None) -> list[RowRef]:
    return _span(await memory.store.refs_for_guild(guild_id), since, until)


async def apply(memory: Memory, erasure: Erasure) -> int:
    """Make the database say what ``erasure`` said when it was made (idempotent); returns the messages forgotten.

    Nothing is buried "as of now": what was said after the erasure (a forgotten channel's later messages) stays.
    """
    if erasure.kind == "forget":
        return await _forget(memory, erasure)
    if erasure.kind == "deleted":
        return await memory.ingest.delete(list(erasure.message_ids))
    guild_id, at = erasure.guild_id, erasure.at
    assert guild_id is not None
    if erasure.kind in ("opt_out", "opt_in"):
        author_id = erasure.author_id
        assert author_id is not None
        opted_out = erasure.kind == "opt_out"
        await memory.set_opt_out(guild_id, author_id, opted_out, at=at, ledger=False)
        if not opted_out:
            return 0
        return await memory.ingest.erase(lambda: _refs_for_author(memory, guild_id, author_id, 0.0, None, None))
    channel_id = erasure.channel_id
    assert channel_id is not None
    on = erasure.kind == "capture_on"
    await memory.switch_capture(guild_id, channel_id, on, at=at)
    if on:
        return 0
    return await memory.ingest.erase(lambda: _in_channel(memory, guild_id, channel_id, at, None))
