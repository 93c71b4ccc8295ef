"""One page of a channel's history read again and compared with memory: what memory lacks is stored, what was
edited since is updated, and what memory holds that Discord no longer has is forgotten. Catch-up and backfill both
read history through here, a page (one request) at a time."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

import discord

from .capture import is_chat_message, note_place, record_from_message
from ..ingest.content import edited_content
from ..store.history import Exclusion, StoredMessage
from ..ingest.report import IngestError

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("PAGE_SIZE", "HistoryChannel", "PageResult", "Reconciler", "parent_id", "read_page", "store_read")

log = logging.getLogger(__name__)

# A channel with a history of its own to read (a forum's messages are all in its posts, which are threads).
HistoryChannel = discord.TextChannel | discord.VoiceChannel | discord.StageChannel | discord.Thread
# Messages per request: the most Discord returns at once.
PAGE_SIZE = 100
# Stored times come from the same snowflakes, or from an export's timestamps; the id filter does the exact work.
_TIME_SLACK = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class PageResult:
    """What one page changed in memory."""

    read: int = 0
    added: int = 0
    edited: int = 0
    deleted: int = 0

    def __add__(self, other: PageResult) -> PageResult:
        return PageResult(self.read + other.read, self.added + other.added, self.edited + other.edited,
                          self.deleted + other.deleted)


def parent_id(channel: discord.abc.GuildChannel | discord.Thread) -> int | None:
    """The parent channel of a thread (its memory is forgotten with the parent's); None for anything else."""
    return channel.parent_id if isinstance(channel, discord.Thread) else None


async def read_page(channel: HistoryChannel, *, after: int | None = None, before: int | None = None,
                    limit: int = PAGE_SIZE) -> list[discord.Message]:
    """One request for history, oldest first: the ``limit`` messages right after ``after``, or else the ``limit``
    newest before ``before`` (before the present when it is None)."""
    if after is not None:
        return [message async for message in channel.history(limit=limit, after=discord.Object(after),
                                                                oldest_first=True)]
    newest_first = [message async for message in channel.history(
        limit=limit, before=discord.Object(before) if before is not None else None)]
    return newest_first[::-1]


async def store_read(memory: Memory) -> None:
    """Stores what the pages read so far added; call it before saving how far the reading got, so a crash reads
    those pages again.

    Raises IngestError when a write failed: the place must not be saved past those messages (ingest keeps them and
    keeps trying; the next read goes over them again). A message rejected for its data (logged by ingest) never
    stores: the reading goes on past it.
    """
    try:
        await memory.flush()
    except IngestError as error:
        if error.report.not_stored:
            raise


def _edited_since(stored: StoredMessage, message: discord.Message) -> bool:
    """Discord holds a newer edit than memory: never an older text over a newer one (a live edit that came while
    this page was on its way)."""
    if message.edited_at is None:
        return False
    if stored.edited_at is not None and message.edited_at.timestamp() <= stored.edited_at:
        return False
    return edited_content(message.content, stored.content) != stored.content


class Reconciler:
    """Brings memory in line with pages of one channel's history.

    ``add_after``: only messages with a later id are stored (those up to it are only checked); None stores every
    chat message memory lacks that live capture would store now: never in a channel whose capture is off, never an
    opted-out member's, never one older than the guild keeps, and never what was forgotten or said while capture was
    off or before its author opted back in (the ledger's exclusions).
    """

    def __init__(self, memory: Memory, guild_id: int, channel: HistoryChannel, *,
                 add_after: int | None = None) -> None:
        self._memory = memory
        self._guild_id = guild_id
        self._channel = channel
        self._add_after = add_after

    async def apply(self, page: list[discord.Message], after: int, upto: int) -> PageResult:
        """``page`` is every message of the channel with an id above ``after`` and up to ``upto``."""
        stored = await self._stored(after, upto)
        storable = await self._storable_now()
        added = edited = 0
        for message in page:
            current = stored.pop(message.id, None)
            if current is None:
                if await storable(message):
                    if not added:  # catch-up and backfill see the channel's name as it is now
                        note_place(self._memory.names, self._channel)
                    await self._memory.add(record_from_message(message))
                    added += 1
            elif _edited_since(current, message):
                if await self._memory.edit(message.id, message.content, message.edited_at):
                    edited += 1
        # What is left was in memory, in this span, and is not on Discord any more.
        deleted = await self._memory.delete(sorted(stored)) if stored else 0
        if stored:
            log.debug("Channel %d: %d stored messages are gone from Discord; forgot them", self._channel.id, deleted)
        return PageResult(len(page), added, edited, deleted)

    async def _stored(self, after: int, upto: int) -> dict[int, StoredMessage]:
        if upto <= after:
            return {}
        start = discord.utils.snowflake_time(after + 1) - _TIME_SLACK
        end = discord.utils.snowflake_time(upto) + _TIME_SLACK
        messages = await self._memory.history.messages_between(self._guild_id, self._channel.id, start, end)
        return {message.message_id: message for message in messages if after < message.message_id <= upto}

    async def _storable_now(self) -> Callable[[discord.Message], Awaitable[bool]]:
        """Which messages of this page may be stored, by the settings and exclusions as they are now.

        The core refuses the same as it writes (admission.py); checking here saves queueing them. Whether an author
        is still a member (``forget_on_leave``) only the cog knows.
        """
        settings = await self._memory.settings(self._guild_id)
        if self._channel.id in settings.capture_disabled_channel_ids:
            return _nothing
        days = settings.retention_days
        kept_from = discord.utils.utcnow() - timedelta(days=days) if days else None
        parent = parent_id(self._channel)
        excluded = await self._memory.history.exclusions(self._guild_id, self._channel.id, parent)
        # A member who left while the bot was away: live, their leave would have forgotten them (webhooks are no one).
        guild = getattr(self._channel, "guild", None)
        members = guild if settings.forget_on_leave and guild is not None and guild.chunked else None

        async def storable(message: discord.Message) -> bool:
            if self._add_after is not None and message.id <= self._add_after:
                return False
            if not is_chat_message(message) or (kept_from is not None and message.created_at < kept_from):
                return False
            if _covered(excluded, message, parent):
                return False
            if members is not None and message.webhook_id is None and members.get_member(message.author.id) is None:
                return False
            return not await self._memory.is_opted_out(self._guild_id, message.author.id)

        return storable


async def _nothing(message: discord.Message) -> bool:
    return False


def _covered(excluded: list[Exclusion], message: discord.Message, parent: int | None) -> bool:
    created_at = message.created_at.timestamp()
    return any(exclusion.covers(message.channel.id, parent, message.author.id, message.id, created_at)
               for exclusion in excluded)
