"""What the memory keeps of a Discord message: the ``MessageRecord`` built from it, and which messages count."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import discord

from ..records import MessageRecord

if TYPE_CHECKING:
    from ..ingest.names import PlaceNames

__all__ = ("CHAT_MESSAGE_TYPES", "is_chat_message", "memory_space_id", "note_place", "record_from_message",
           "parse_message_link")

CHAT_MESSAGE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
# Threads anyone who reads the parent channel may read (forum and media posts are public threads too). Any other
# kind of thread, a future one included, is stored as private, so it is never read through its parent.
PUBLIC_THREAD_TYPES = frozenset({discord.ChannelType.public_thread, discord.ChannelType.news_thread})
_MESSAGE_LINK = re.compile(
    r"https?://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/channels/"
    r"(?P<guild>[0-9]{1,20})/(?P<channel>[0-9]{1,20})/(?P<message>[0-9]{1,20})"
)
# SQLite holds signed 64-bit integers, and no Discord id (a snowflake) reaches 2**63.
_SNOWFLAKE_END = 2**63


def is_chat_message(message: discord.Message, *, store_dms: bool = False) -> bool:
    """Guild chat messages, and DMs where the host enabled them; joins, pins and other notices are not kept."""
    if message.type not in CHAT_MESSAGE_TYPES:
        return False
    return message.guild is not None or (store_dms and isinstance(message.channel, discord.DMChannel))


def memory_space_id(message: discord.Message) -> int:
    """The guild's id; a DM is a memory space of its own, keyed by its channel id, so it never meets a guild's."""
    return message.guild.id if message.guild is not None else message.channel.id


def _stand_ins(message: discord.Message) -> tuple[str, ...]:
    names = [attachment.filename for attachment in message.attachments]
    names += [embed.title for embed in message.embeds if embed.title]
    names += [sticker.name for sticker in message.stickers]
    return tuple(names)


def _automated(message: discord.Message) -> bool:
    """Written by a webhook or by another bot; this bot's own messages (its answers) are kept as they always were."""
    if message.webhook_id is not None:
        return True
    if not message.author.bot:
        return False
    # In a DM the only bot is this one: bots cannot write to each other there.
    me = message.guild.me if message.guild is not None else None
    return me is not None and message.author.id != me.id


def record_from_message(message: discord.Message) -> MessageRecord:
    channel = message.channel
    thread = channel if isinstance(channel, discord.Thread) else None
    parent_id = thread.parent_id if thread is not None else None
    # A reply names what it answers; a forward carries a reference too, to a message that is not a question to it.
    reference = message.reference if message.type is discord.MessageType.reply else None
    return MessageRecord(
        message_id=message.id,
        guild_id=memory_space_id(message),
        channel_id=channel.id,
        parent_channel_id=parent_id,
        author_id=message.author.id,
        author_name=message.author.display_name,
        content=message.content,
        created_at=message.created_at,
        edited_at=message.edited_at,
        reply_to_id=reference.message_id if reference is not None else None,
        author_is_bot=message.author.bot,
        automated=_automated(message),
        attachments=_stand_ins(message),
        private_thread=thread is not None and thread.type not in PUBLIC_THREAD_TYPES,
    )


def note_place(names: PlaceNames, channel: discord.abc.Snowflake) -> None:
    """The names of a guild channel and its guild as seen now (a thread's with its parent's); a DM has none. Costs a
    dict look-up when nothing changed: only a new or changed name is written."""
    guild = getattr(channel, "guild", None)
    name = getattr(channel, "name", None)
    if guild is None or not name:
        return
    names.note_guild(guild.id, guild.name)
    if isinstance(channel, discord.Thread):
        if channel.parent is not None:
            names.note_channel(guild.id, channel.parent.id, channel.parent.name)
        names.note_channel(guild.id, channel.id, name, channel.parent_id)
    else:
        names.note_channel(guild.id, channel.id, name)


def parse_message_link(link: str) -> tuple[int, int, int] | None:
    """(guild_id, channel_id, message_id) from a "Copy Message Link" URL, or None."""
    match = _MESSAGE_LINK.fullmatch(link.strip())
    if match is None:
        return None
    ids = int(match["guild"]), int(match["channel"]), int(match["message"])
    return ids if all(0 < part < _SNOWFLAKE_END for part in ids) else None
