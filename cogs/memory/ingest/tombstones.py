"""Deletes and edits that race ahead of their add: what was forgotten is not stored later, and what was edited is
not stored as it read before the edit."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from ..records import MessageRecord

__all__ = ("TOMBSTONE_DAYS", "PendingEdits", "Tombstones")

K = TypeVar("K")

# SQLite keeps a deleted message's id this long: long enough for any late event, import or second process.
TOMBSTONE_DAYS = 30
# Memory keeps what was forgotten this long, for the hot path. Deleted message ids are only a shortcut there (a
# late add is dropped before it is embedded): SQLite holds them all, and the writer checks it for every batch.
HOT_WINDOW_S = 3600.0
# At most this many deleted ids in memory (a retention sweep may delete millions).
HOT_MESSAGE_LIMIT = 100_000
# Edits of messages not stored yet, waiting for their add: a short race, so a short wait and a small table.
PENDING_EDIT_WINDOW_S = 3600.0
PENDING_EDIT_LIMIT = 10_000

Clock = Callable[[], float]


def _trim(table: dict[K, float], oldest: float, limit: int) -> None:
    """Drop entries stamped before ``oldest`` and the oldest beyond ``limit`` (dicts keep insertion order)."""
    while table:
        key, stamped = next(iter(table.items()))
        if stamped >= oldest and len(table) <= limit:
            return
        del table[key]


class Tombstones:
    """What was deleted recently: message ids, and channels, guilds and authors with the moment each was forgotten.

    A channel, guild or author tombstone covers only messages created before that moment, so a channel forgotten by
    command, a guild the bot rejoins or a member who opts back in (or rejoins) is remembered again from then on.
    """

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self._messages: dict[int, float] = {}
        self._channels: dict[tuple[int, int], float] = {}
        self._guilds: dict[int, float] = {}
        # (guild_id, author_id); guild_id None: the author was forgotten everywhere.
        self._authors: dict[tuple[int | None, int], float] = {}

    def bury_messages(self, message_ids: Sequence[int]) -> None:
        now = self._clock()
        for message_id in message_ids[-HOT_MESSAGE_LIMIT:]:
            self._messages.pop(message_id, None)  # re-inserted at the end: insertion order stays time order
            self._messages[message_id] = now
        _trim(self._messages, now - HOT_WINDOW_S, HOT_MESSAGE_LIMIT)

    def bury_channel(self, guild_id: int, channel_id: int) -> None:
        """A channel and its threads: ``channel_id`` matches a message's channel or its thread's parent."""
        self._bury(self._channels, (guild_id, channel_id))

    def bury_guild(self, guild_id: int) -> None:
        self._bury(self._guilds, guild_id)

    def bury_author(self, guild_id: int | None, author_id: int) -> None:
        self._bury(self._authors, (guild_id, author_id))

    def _bury(self, table: dict[K, float], key: K) -> None:
        now = self._clock()
        table.pop(key, None)
        table[key] = now
        _trim(table, now - HOT_WINDOW_S, HOT_MESSAGE_LIMIT)

    def holds_message(self, message_id: int) -> bool:
        buried = self._messages.get(message_id)
        return buried is not None and self._clock() - buried <= HOT_WINDOW_S

    def covers(self, record: MessageRecord) -> bool:
        """Whether ``record`` was deleted, or lies in a channel, guild or author's past that was forgotten."""
        if self.holds_message(record.message_id):
            return True
        if not (self._channels or self._guilds or self._authors):
            return False  # the usual case: one dict lookup per message
        created = record.created_at.timestamp()
        guild_id = record.guild_id
        return (
            self._before(self._guilds, guild_id, created)
            or self._before(self._channels, (guild_id, record.channel_id), created)
            or (record.parent_channel_id is not None
                and self._before(self._channels, (guild_id, record.parent_channel_id), created))
            or self._before(self._authors, (guild_id, record.author_id), created)
            or self._before(self._authors, (None, record.author_id), created)
        )

    def _before(self, table: dict[K, float], key: K, created: float) -> bool:
        forgotten = table.get(key)
        return forgotten is not None and created <= forgotten and self._clock() - forgotten <= HOT_WINDOW_S


@dataclass(frozen=True, slots=True)
class PendingEdit:
    content: str
    edited_at: datetime | None
    noted_at: float

    def newer_than(self, edited_at: datetime | None) -> bool:
        """Unknown edit times count as newer: the later arrival wins, as it would for a stored message."""
        return self.edited_at is None or edited_at is None or self.edited_at >= edited_at


class PendingEdits:
    """The newest edit of each message that was not stored when the edit arrived, applied when its add comes."""

    def __init__(self, clock: Clock = time.time) -> None:
        self._clock = clock
        self._edits: dict[int, PendingEdit] = {}

    def note(self, message_id: int, content: str, edited_at: datetime | None) -> None:
        now = self._clock()
        edit = PendingEdit(content, edited_at, now)
        earlier = self._edits.pop(message_id, None)
        self._edits[message_id] = earlier if earlier is not None and not edit.newer_than(earlier.edited_at) else edit
        while self._edits:
            oldest_id, oldest = next(iter(self._edits.items()))
            if oldest.noted_at >= now - PENDING_EDIT_WINDOW_S and len(self._edits) <= PENDING_EDIT_LIMIT:
                break
            del self._edits[oldest_id]

    def discard(self, message_ids: Iterable[int]) -> None:
        for message_id in message_ids:
            self._edits.pop(message_id, None)

    def apply(self, record: MessageRecord) -> MessageRecord:
        """``record`` with the newest pending edit's text, unless the record itself is as new (a later fetch)."""
        if not self._edits:
            return record
        edit = self._edits.get(record.message_id)
        if edit is None or self._clock() - edit.noted_at > PENDING_EDIT_WINDOW_S:
            return record
        if record.edited_at is not None and not edit.newer_than(record.edited_at):
            return record
        return dataclasses.replace(record, content=edit.content, edited_at=edit.edited_at or record.edited_at)
