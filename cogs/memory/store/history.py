"""What memory needs to read a channel's history again, on either store: the records (a stored message, an exclusion,
catch-up and backfill progress), the ``HistoryLedger`` protocol the cog uses, and the columns both stores' progress
tables share. ``sqlite/history.py`` and ``postgres/history.py`` keep it; message ids are plain integers here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

__all__ = ("BACKFILL_COLUMNS", "BACKFILL_UPDATE", "CATCHUP_COLUMNS", "CATCHUP_UPDATE", "EXCLUSION_COLUMNS",
           "PROGRESS_TABLES", "BackfillProgress", "CatchUpProgress", "Exclusion", "HistoryLedger", "StoredMessage")

CATCHUP_COLUMNS = "channel_id, guild_id, parent_channel_id, position, anchor, read, added, edited, deleted, finished"
# The upserts' conflict clauses, the same on both stores.
CATCHUP_UPDATE = """ON CONFLICT (channel_id) DO UPDATE SET
    guild_id = excluded.guild_id, parent_channel_id = excluded.parent_channel_id, position = excluded.position,
    anchor = excluded.anchor, read = excluded.read, added = excluded.added, edited = excluded.edited,
    deleted = excluded.deleted, finished = excluded.finished, updated_at = excluded.updated_at"""
BACKFILL_COLUMNS = "channel_id, guild_id, parent_channel_id, oldest_id, newest_id, reached_start"
BACKFILL_UPDATE = """ON CONFLICT (channel_id) DO UPDATE SET
    guild_id = excluded.guild_id, parent_channel_id = excluded.parent_channel_id, oldest_id = excluded.oldest_id,
    newest_id = excluded.newest_id, reached_start = excluded.reached_start, updated_at = excluded.updated_at"""
PROGRESS_TABLES = ("catchup_progress", "backfill_progress")
EXCLUSION_COLUMNS = "guild_id, channel_id, author_id, message_id, since, until"


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """A stored message as a history check compares it with the channel's: its text and when it was last edited."""

    message_id: int
    content: str
    created_at: float
    edited_at: float | None


@dataclass(frozen=True, slots=True)
class Exclusion:
    """What reading history again must never store, because memory would not have it now: what was forgotten (a
    guild, a channel and its threads, a member, one message) and what was said while a channel's capture was off or
    before a member opted back in.

    ``None`` fields cover everything (``guild_id`` None: every guild); it covers messages created from ``since`` to
    ``until`` (Unix seconds; ``until`` None: still going on), or the one ``message_id``.
    """

    guild_id: int | None
    channel_id: int | None = None
    author_id: int | None = None
    message_id: int | None = None
    since: float = 0.0
    until: float | None = None

    def covers(self, channel_id: int, parent_id: int | None, author_id: int, message_id: int,
               created_at: float) -> bool:
        if self.channel_id is not None and self.channel_id not in (channel_id, parent_id):
            return False
        if self.author_id is not None and self.author_id != author_id:
            return False
        if self.message_id is not None:
            return self.message_id == message_id
        return self.since <= created_at and (self.until is None or created_at <= self.until)


@dataclass(frozen=True, slots=True)
class CatchUpProgress:
    """One channel's catch-up: history is read forward from ``position`` to the present.

    ``anchor`` is the newest message the bot had heard before the session began: messages after it were missed and
    are stored; those up to it are only checked against what memory holds (edits applied, deleted ones forgotten),
    never stored again, so nothing forgotten comes back. The counts are this catch-up's, for the log and stats.
    """

    channel_id: int
    guild_id: int
    parent_channel_id: int | None
    position: int
    anchor: int
    read: int = 0
    added: int = 0
    edited: int = 0
    deleted: int = 0
    finished: bool = False


@dataclass(frozen=True, slots=True)
class BackfillProgress:
    """The span of a channel's history ``/memory backfill`` has read: every message from ``oldest_id`` to
    ``newest_id``. A run reads on forward after ``newest_id``, then back before ``oldest_id`` until
    ``reached_start`` (the channel's first message)."""

    channel_id: int
    guild_id: int
    parent_channel_id: int | None
    oldest_id: int | None = None
    newest_id: int | None = None
    reached_start: bool = False


class HistoryLedger(Protocol):
    """Stored spans of a channel, and saved catch-up and backfill progress (times are timezone-aware UTC)."""

    async def recent_messages(self, guild_id: int, channel_id: int, before: datetime, count: int,
                              before_id: int | None = None) -> list[StoredMessage]:
        """The channel's ``count`` newest stored messages created before ``before``, newest first; with
        ``before_id``, those created at ``before`` itself with a smaller id too (a page ends on a (time, id) pair,
        so messages sharing a timestamp across a page boundary are not skipped)."""

    async def messages_between(self, guild_id: int, channel_id: int, after: datetime,
                               until: datetime) -> list[StoredMessage]:
        """The channel's stored messages created from ``after`` to ``until`` (both included), oldest first."""

    async def newest_message_id(self, guild_id: int, before: datetime) -> int | None:
        """The id of the guild's newest stored message created before ``before``, if any."""

    async def newest_in_channel(self, guild_id: int, channel_id: int) -> int | None:
        """The id of the channel's newest stored message, if any."""

    async def catchup_progress(self, channel_id: int) -> CatchUpProgress | None: ...

    async def save_catchup(self, progress: CatchUpProgress) -> None: ...

    async def backfill_progress(self, channel_id: int) -> BackfillProgress | None: ...

    async def save_backfill(self, progress: BackfillProgress) -> None: ...

    async def forget(self, guild_id: int, channel_id: int | None = None) -> None:
        """Drop the progress of a channel and its threads (or a whole guild): its memory was forgotten, so a
        backfill reads it all again instead of skipping what it once read."""

    async def exclusions(self, guild_id: int, channel_id: int, parent_id: int | None) -> list[Exclusion]:
        """Every exclusion that can cover a message of the channel (a thread of ``parent_id``) in the guild."""

    async def exclude(self, exclusion: Exclusion) -> None:
        """Records what history must not bring back."""

    async def end_exclusions(self, guild_id: int, channel_id: int, until: float) -> None:
        """Ends the channel's open exclusions at ``until``: capture is on again."""
