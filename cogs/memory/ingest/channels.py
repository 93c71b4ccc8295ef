"""Channel ids another guild holds. A channel belongs to one guild (its id is a Discord snowflake, unique across
Discord), so a message whose channel or thread parent is stored under another guild is bad data (a crafted export,
an export imported into the wrong guild): the writer refuses it alone, with one line saying what to do.

Each channel is looked up in the store once per process (an index seek per guild); after that a message of the guild
that holds it costs a dict lookup. A refusal is never taken from the cache alone: a channel forgotten in the other
guild since is looked up again, and then accepted."""

from __future__ import annotations

from collections.abc import Sequence

from ..records import MessageRecord
from ..store.protocol import MessageWrites

__all__ = ("ChannelOwners",)


def _channels(record: MessageRecord) -> list[tuple[str, int]]:
    """(what it is to the message, id) of the channels a message is said in."""
    named = [("channel", record.channel_id)]
    if record.parent_channel_id is not None:
        named.append(("thread's parent channel", record.parent_channel_id))
    return named


def _why(kind: str, channel_id: int, guild_id: int) -> str:
    return (f"its {kind} {channel_id} belongs to guild {guild_id} (a channel belongs to one guild: an export imported "
            f"into the wrong guild?); if guild {guild_id} is the wrong one, forget it there first: python -m "
            f"cogs.memory forget --guild {guild_id} --channel {channel_id}")


class ChannelOwners:
    """The guild each channel id belongs to, as far as this process has stored or looked it up. The writer's alone:
    called under its lock."""

    def __init__(self, store: MessageWrites) -> None:
        self._store = store
        self._owner: dict[int, int] = {}  # channel id -> the guild this process stored it under

    async def collisions(self, records: Sequence[MessageRecord]) -> dict[int, str]:
        """Message id -> why, for each of ``records`` (new messages, in order) whose channel or thread parent is held
        by another guild: stored there, or claimed by an earlier message of ``records``."""
        unsure = sorted({channel_id for record in records for _, channel_id in _channels(record)
                         if self._owner.get(channel_id) != record.guild_id})
        stored = await self._store.channel_guilds(unsure) if unsure else {}
        claimed: dict[int, int] = {}
        refused: dict[int, str] = {}
        for record in records:
            why = None
            for kind, channel_id in _channels(record):
                holders = set(stored.get(channel_id, ())) if channel_id in unsure else {self._owner[channel_id]}
                holders |= {claimed[channel_id]} if channel_id in claimed else set()
                others = sorted(holders - {record.guild_id})
                if others:
                    why = _why(kind, channel_id, others[0])
                    break
            if why is not None:
                refused[record.message_id] = why
                continue
            for _, channel_id in _channels(record):
                claimed[channel_id] = record.guild_id
        return refused

    def stored(self, records: Sequence[MessageRecord]) -> None:
        """``records`` are stored (their transaction committed): their channels are their guilds'."""
        for record in records:
            for _, channel_id in _channels(record):
                self._owner[channel_id] = record.guild_id
