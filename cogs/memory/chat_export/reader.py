"""Reads DiscordChatExporter JSON exports (the archive format server admins already use) into ``MessageRecord``s."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..records import MessageRecord

__all__ = ("Export", "ExportError", "ExportedChannel", "RejectedMessage", "read_export")

# Chat messages; joins, pins, boosts and calls are system notices with nothing worth recalling.
CHAT_MESSAGE_TYPES = frozenset({"Default", "Reply"})
THREAD_TYPES = frozenset({"GuildPublicThread", "GuildPrivateThread", "GuildNewsThread"})
# Read through their parent channel; every other thread kind is stored as private, so it never leaks.
PUBLIC_THREAD_TYPES = frozenset({"GuildPublicThread", "GuildNewsThread"})


class ExportError(ValueError):
    """The file cannot be read as a DiscordChatExporter JSON export; the message names it and says why."""


@dataclass(frozen=True, slots=True)
class ExportedChannel:
    guild_id: int
    guild_name: str
    channel_id: int
    channel_name: str
    parent_channel_id: int | None
    message_count: int
    private_thread: bool = False
    parent_channel_name: str = ""  # a thread's parent channel's name


@dataclass(frozen=True, slots=True)
class RejectedMessage:
    """A message of the export that cannot be stored, and why; the rest of the file still is."""

    message_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Export:
    """One export file: its channel, its chat messages oldest first, the messages rejected, and how many were system
    notices (joins, pins, thread creations): together, every message of the file."""

    channel: ExportedChannel
    records: list[MessageRecord]
    rejected: list[RejectedMessage]
    notices: int = 0


def _timestamp(raw: str | None) -> datetime | None:
    if not raw:
        return None
    parsed = datetime.fromisoformat(raw)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _created_at(raw: str | None) -> datetime:
    """A message's time, which every message has: ValueError for one without it."""
    created = _timestamp(raw)
    if created is None:
        raise ValueError(f"its timestamp is {json.dumps(raw)}, not a time")
    return created


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
        if not isinstance(data["messages"], list):
            raise TypeError("'messages' is not a list")
        return ExportedChannel(
            guild_id=int(guild["id"]),
            guild_name=guild.get("name", ""),
            channel_id=int(channel["id"]),
            channel_name=channel.get("name", ""),
            parent_channel_id=parent,
            message_count=len(data["messages"]),
            private_thread=parent is not None and kind not in PUBLIC_THREAD_TYPES,
            # ...and its name into category.
            parent_channel_name=str(channel.get("category") or "") if parent is not None else "",
        )
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise ExportError(f"{path}: not a DiscordChatExporter JSON export (missing or bad {error})") from error


def _record(message: dict[str, Any], channel: ExportedChannel) -> MessageRecord | None:
    if message.get("type", "Default") not in CHAT_MESSAGE_TYPES:
        return None
    content = message.get("content", "")
    if not isinstance(content, str):
        raise TypeError(f"its content is {json.dumps(content)}, not text")
    author = message["author"]
    # A reply names what it answers; another message's reference (a forward) is not a question to it.
    reply_to = (message.get("reference") or {}).get("messageId") if message.get("type") == "Reply" else None
    return MessageRecord(
        message_id=int(message["id"]),
        guild_id=channel.guild_id,
        channel_id=channel.channel_id,
        parent_channel_id=channel.parent_channel_id,
        author_id=int(author["id"]),
        author_name=author.get("nickname") or author.get("name") or str(author["id"]),
        content=content,
        created_at=_created_at(message["timestamp"]),
        edited_at=_timestamp(message.get("timestampEdited")),
        reply_to_id=int(reply_to) if reply_to else None,
        author_is_bot=bool(author.get("isBot", False)),
        # An export cannot tell this bot's messages from another's (or a webhook's, which it marks as bots too).
        automated=bool(author.get("isBot", False)),
        attachments=_attachments(message),
        private_thread=channel.private_thread,
    )


def _reason(error: Exception) -> str:
    return f"no {error}" if isinstance(error, KeyError) else str(error)


def _load_json(path: Path) -> Any:
    """The file's JSON, or an ExportError that says in one line what is wrong with the file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ExportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ExportError(f"{path}: is a folder, not an export file") from None
    except OSError as error:
        raise ExportError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        # DiscordChatExporter writes UTF-8; a byte-order mark (an editor's re-save) is accepted. Anything else is
        # refused rather than decoded with replacement characters, which would store garbled text silently.
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ExportError(f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); "
                          "export it again, or convert it to UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # The parser ran out of text: the file was cut short (a copy or a download that did not finish).
        if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string"):
            raise ExportError(f"{path}: the JSON ends early (the file is truncated); export or copy it "
                              "again") from None
        raise ExportError(f"{path}: not JSON ({error})") from None


def read_export(path: Path) -> Export:
    """Parses one export file (blocking: call it off the event loop); chat messages come out oldest first.

    A message that cannot be read (no id, text that is not text, a bad time) is rejected alone.
    """
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ExportError(f"{path}: not a DiscordChatExporter JSON export (top level is not an object)")
    channel = _channel(data, path)
    records: list[MessageRecord] = []
    rejected: list[RejectedMessage] = []
    notices = 0
    for position, message in enumerate(data["messages"]):
        try:
            if not isinstance(message, dict):
                raise TypeError("it is not an object")
            record = _record(message, channel)
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            message_id = message.get("id") if isinstance(message, dict) else None
            rejected.append(RejectedMessage(str(message_id) if message_id else f"#{position + 1}", _reason(error)))
            continue
        if record is None:
            notices += 1
        else:
            records.append(record)
    return Export(channel, records, rejected, notices)
