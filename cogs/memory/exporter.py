"""Reads DiscordChatExporter JSON exports (the archive format server admins already use) into ``MessageRecord``s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .records import MessageRecord

__all__ = ("ExportError", "ExportedChannel", "read_export")

# Chat messages; joins, pins, boosts and calls are system notices with nothing worth recalling.
CHAT_MESSAGE_TYPES = frozenset({"Default", "Reply"})
THREAD_TYPES = frozenset({"GuildPublicThread", "GuildPrivateThread", "GuildNewsThread"})
# Read through their parent channel; every other thread kind is stored as private, so it never leaks.
PUBLIC_THREAD_TYPES = frozenset({"GuildPublicThread", "GuildNewsThread"})


class ExportError(ValueError):
    """The file is not a DiscordChatExporter JSON export."""


@dataclass(frozen=True, slots=True)
class ExportedChannel:
    guild_id: int
    guild_name: str
    channel_id: int
    channel_name: str
    parent_channel_id: int | None
    message_count: int
    private_thread: bool = False


def _timestamp(raw: str | None) -> datetime | None:
    if not raw:
        return None
    parsed = datetime.fromisoformat(raw)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _attachments(message: dict[str, Any]) -> tuple[str, ...]:
    names = [attachment.get("fileName", "") for attachment in message.get("attachments", [])]
    names += [embed.get("title", "") for embed in message.get("embeds", [])]
    return tuple(name for name in names if name)


def _channel(data: dict[str, Any], path: Path) -> ExportedChannel:
    try:
        guild, channel = data["guild"], data["channel"]
        # DiscordChatExporter writes a thread's parent channel into categoryId.
        kind = channel.get("type")
        parent = int(channel["categoryId"]) if kind in THREAD_TYPES and channel.get("categoryId") else None
        return ExportedChannel(
            guild_id=int(guild["id"]),
            guild_name=guild.get("name", ""),
            channel_id=int(channel["id"]),
            channel_name=channel.get("name", ""),
            parent_channel_id=parent,
            message_count=len(data["messages"]),
            private_thread=parent is not None and kind not in PUBLIC_THREAD_TYPES,
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ExportError(f"{path}: not a DiscordChatExporter JSON export (missing or bad {error})") from error


def _record(message: dict[str, Any], channel: ExportedChannel) -> MessageRecord | None:
    if message.get("type", "Default") not in CHAT_MESSAGE_TYPES:
        return None
    author = message["author"]
    reference = message.get("reference") or {}
    reply_to = reference.get("messageId")
    return MessageRecord(
        message_id=int(message["id"]),
        guild_id=channel.guild_id,
        channel_id=channel.channel_id,
        parent_channel_id=channel.parent_channel_id,
        author_id=int(author["id"]),
        author_name=author.get("nickname") or author.get("name") or str(author["id"]),
        content=message.get("content", ""),
        created_at=_timestamp(message["timestamp"]),
        edited_at=_timestamp(message.get("timestampEdited")),
        reply_to_id=int(reply_to) if reply_to else None,
        author_is_bot=bool(author.get("isBot", False)),
        attachments=_attachments(message),
        private_thread=channel.private_thread,
    )


def read_export(path: Path) -> tuple[ExportedChannel, Iterator[MessageRecord]]:
    """Parses one export file (blocking: call it off the event loop); chat messages come out oldest first."""
    try:
        with path.open(encoding="utf-8") as file:
            data = json.load(file)
    except json.JSONDecodeError as error:
        raise ExportError(f"{path}: not JSON ({error})") from error
    if not isinstance(data, dict):
        raise ExportError(f"{path}: not a DiscordChatExporter JSON export (top level is not an object)")
    channel = _channel(data, path)

    def records() -> Iterator[MessageRecord]:
        for message in data["messages"]:
            try:
                record = _record(message, channel)
            except (KeyError, TypeError, ValueError) as error:
                raise ExportError(f"{path}: message {message.get('id')!r} is malformed ({error})") from error
            if record is not None:
                yield record

    return channel, records()
