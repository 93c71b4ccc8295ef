"""What memory holds of one member in one guild, as the member may see it (a subject access request): their messages
per channel and since when, whether they opted out and since when, their latest messages, and where their messages
were quoted. Which channels the member can read now is the caller's to say (the core knows nothing of Discord):
channels outside it are counted, never named, and their messages never shown."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..store.member_rows import MemberChannel, MemberMessage, Quotation
from ..store.protocol import MemberRecords

__all__ = ("MemberHoldings", "Readable", "SubjectAccess", "opted_out_since")


@dataclass(frozen=True, slots=True)
class Readable:
    """The channels a member can read now: by id (cached channels and threads), and the channels whose public threads
    they read (an archived thread is not cached, so its parent speaks for it). ``everything`` (a terminal, which
    knows no permissions): every channel counts as readable."""

    channel_ids: frozenset[int] = frozenset()
    thread_parent_ids: frozenset[int] = frozenset()
    everything: bool = False

    def __contains__(self, channel: MemberChannel | MemberMessage) -> bool:
        if self.everything or channel.channel_id in self.channel_ids:
            return True
        private = isinstance(channel, MemberChannel) and channel.private_thread
        return not private and channel.parent_channel_id in self.thread_parent_ids


@dataclass(frozen=True, slots=True)
class MemberHoldings:
    """One member's holdings in one guild: the channels they can read now (with counts), what lies in the others
    (counts only), their opt-out and its time, and the newest quotations of their messages."""

    guild_id: int
    member_id: int
    channels: tuple[MemberChannel, ...]
    hidden_channels: int
    hidden_messages: int
    opted_out: bool
    opted_out_at: float | None
    quotations: tuple[Quotation, ...]

    @property
    def messages(self) -> int:
        """Stored messages in the channels the member can read now."""
        return sum(channel.messages for channel in self.channels)

    @property
    def since(self) -> float | None:
        """When the oldest stored message (in a channel the member can read) was written."""
        return min((channel.first_at for channel in self.channels), default=None)

    @property
    def holds_nothing(self) -> bool:
        """Nothing at all is held of the member here: no message anywhere, no opt-out, no quotation."""
        return not (self.channels or self.hidden_messages or self.opted_out or self.quotations)


def opted_out_since(entries: dict[str, str], guild_id: int, member_id: int) -> float | None:
    """When the member's last opt-out in ``guild_id`` was recorded (the erasure ledger's entry), None when their last
    switch was an opt-in or they never switched. Entries are the store's ``erasures()`` (id → ledger line)."""
    latest: tuple[float, str] | None = None
    for line in entries.values():
        fields = json.loads(line)
        if fields.get("kind") in ("opt_out", "opt_in") and fields.get("guild") == guild_id and \
                fields.get("author") == member_id and (latest is None or fields["at"] >= latest[0]):
            latest = (float(fields["at"]), fields["kind"])
    return latest[0] if latest is not None and latest[1] == "opt_out" else None


class SubjectAccess:
    """Reads what memory holds of a member, within what they can read now (``Readable``)."""

    def __init__(self, store: MemberRecords) -> None:
        self._store = store

    async def holdings(self, guild_id: int, member_id: int, readable: Readable, *, opted_out: bool,
                       quotations: int | None = 10) -> MemberHoldings:
        """The member's holdings in ``guild_id``; ``quotations``: the newest this many (None: every one kept), only
        of messages in channels they can read now."""
        channels = await self._store.member_channels(guild_id, member_id)
        shown = tuple(channel for channel in channels if channel in readable)
        hidden = [channel for channel in channels if channel not in readable]
        shown_ids = {channel.channel_id for channel in shown}
        quoted = [quote for quote in await self._store.member_quotations(guild_id, member_id, None)
                  if quote.channel_id in shown_ids]
        since = opted_out_since(await self._store.erasures(), guild_id, member_id) if opted_out else None
        return MemberHoldings(guild_id, member_id, shown, len(hidden), sum(channel.messages for channel in hidden),
                              opted_out, since, tuple(quoted if quotations is None else quoted[:quotations]))

    async def latest(self, guild_id: int, member_id: int, readable: Readable,
                     limit: int) -> list[MemberMessage]:
        """The member's newest ``limit`` stored messages in channels they can read now, newest first."""
        channels = {channel.channel_id for channel in await self._store.member_channels(guild_id, member_id)
                    if channel in readable}
        found: list[MemberMessage] = []
        async for message in self._store.iter_member_messages(guild_id, member_id, newest_first=True,
                                                              page=max(limit, 16)):
            if message.channel_id in channels:
                found.append(message)
                if len(found) >= limit:
                    break
        return found

    async def messages(self, guild_id: int, member_id: int, readable: Readable) -> AsyncIterator[MemberMessage]:
        """Every stored message of the member in channels they can read now, oldest first, a page at a time."""
        channels = {channel.channel_id for channel in await self._store.member_channels(guild_id, member_id)
                    if channel in readable}
        async for message in self._store.iter_member_messages(guild_id, member_id):
            if message.channel_id in channels:
                yield message

    async def next_export_at(self, guild_id: int, member_id: int, interval_hours: int,
                             now: float | None = None) -> float | None:
        """When the member may have their next export (None: now), one every ``interval_hours`` (0: no limit)."""
        last = await self._store.last_export(guild_id, member_id)
        if last is None or interval_hours <= 0:
            return None
        due = last + interval_hours * 3600.0
        return due if due > (time.time() if now is None else now) else None

    async def exported(self, guild_id: int, member_id: int) -> None:
        """Note that the member was sent their export now: the limit counts from here."""
        await self._store.note_export(guild_id, member_id)
