"""Reads DiscordChatExporter JSON exports (the archive format server admins already use) into ``MessageRecord``s, a
batch at a time: memory holds a batch of messages, never the file.

A file is read twice. The first reading checks all of it (JSON, UTF-8, how deep it nests, its shape) and takes its
header (guild, channel) and message count; the second hands over its messages. So a file that is cut short or is not
an export stores nothing, and the header may come anywhere in the file.
"""

from __future__ import annotations

import codecs
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

import ijson

from ..records import MessageRecord

__all__ = ("MAX_DEPTH", "ExportBatch", "ExportError", "ExportFile", "ExportedChannel", "ReadStopped",
           "RejectedMessage", "open_export")

# Chat messages; joins, pins, boosts and calls are system notices with nothing worth recalling.
CHAT_MESSAGE_TYPES = frozenset({"Default", "Reply"})
THREAD_TYPES = frozenset({"GuildPublicThread", "GuildPrivateThread", "GuildNewsThread"})
# Read through their parent channel; every other thread kind is stored as private, so it never leaks.
PUBLIC_THREAD_TYPES = frozenset({"GuildPublicThread", "GuildNewsThread"})
# An export nests 7 deep at most (the file, messages, a message, embeds, an embed, fields, a field). Deeper is not an
# export, and the parser's cost grows with the square of the depth (a million `[` would take it terabytes).
MAX_DEPTH = 64
# What the parser reads at a time; a stop is noticed between two reads.
READ_BYTES = 64 * 1024
_HEADER_KEYS = frozenset({"guild", "channel"})
_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})


class ExportError(ValueError):
    """The file cannot be read as a DiscordChatExporter JSON export; the message names it and says why."""


class ReadStopped(Exception):
    """Reading was stopped (its ``stop`` event set) before the file's end."""


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
class ExportBatch:
    """The next messages of a file: its chat messages in file order, those rejected, and how many were system notices
    (joins, pins, thread creations); ``read`` counts the file's messages read so far, this batch's included."""

    records: list[MessageRecord]
    rejected: list[RejectedMessage]
    notices: int
    read: int


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


def _channel(header: dict[str, Any], messages: int | None, path: Path) -> ExportedChannel:
    try:
        guild, channel = header["guild"], header["channel"]
        # DiscordChatExporter writes a thread's parent channel into categoryId.
        kind = channel.get("type")
        parent = int(channel["categoryId"]) if kind in THREAD_TYPES and channel.get("categoryId") else None
        if messages is None:
            raise KeyError("messages")
        return ExportedChannel(
            guild_id=int(guild["id"]),
            guild_name=guild.get("name", ""),
            channel_id=int(channel["id"]),
            channel_name=channel.get("name", ""),
            parent_channel_id=parent,
            message_count=messages,
            private_thread=parent is not None and kind not in PUBLIC_THREAD_TYPES,
            # ...and its name into category.
            parent_channel_name=str(channel.get("category") or "") if parent is not None else "",
        )
    except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as error:
        raise ExportError(f"{path}: not a DiscordChatExporter JSON export (missing or bad {error})") from error


def _record(message: dict[str, Any], channel: ExportedChannel) -> MessageRecord | None:
    if message.get("type", "Default") not in CHAT_MESSAGE_TYPES:
        return None
    content = message.get("content", "")
    if not isinstance(content, str):
        raise TypeError(f"its content is {json.dumps(content)}, not text")
    author = message["author"]
    created_at = _timestamp(message["timestamp"])
    if created_at is None:
        raise KeyError("timestamp")
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
        created_at=created_at,
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


class _CheckedBytes:
    """The file's bytes as the parser reads them: without a byte-order mark (an editor's re-save), checked to be
    UTF-8 on the way (DiscordChatExporter writes UTF-8, and the parser's own check names no offset), and cut off with
    ``ReadStopped`` once ``stop`` is set."""

    def __init__(self, file: BinaryIO, path: Path, stop: threading.Event | None) -> None:
        self._file, self._path, self._stop = file, path, stop
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._offset = 0  # of the next byte read, in the file

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # the parser asks what kind of file it reads
            return b""
        if self._stop is not None and self._stop.is_set():
            raise ReadStopped
        try:
            data = self._file.read(size)
        except OSError as error:  # a disk or a network share that fails
            raise ExportError(f"{self._path}: cannot be read ({error.strerror or error})") from None
        start, self._offset = self._offset, self._offset + len(data)
        if start == 0 and data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8):]
            start = len(codecs.BOM_UTF8)
        pending = self._decoder.getstate()[0]  # the start of a character the previous read cut in two
        try:
            self._decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            bad = (pending + data)[error.start]
            raise ExportError(f"{self._path}: not UTF-8 text (byte 0x{bad:02x} at offset "
                              f"{start - len(pending) + error.start}); export it again, or convert it to UTF-8"
                              ) from None
        return data


def _json_error(path: Path, error: Exception) -> ExportError:
    """The parser's complaint in one line: its first, without the file's text it quotes (a terminal shows a file's
    bytes as they are)."""
    words = str(error).split("\n", 1)[0].rstrip(".")
    if "premature EOF" in words:  # the parser ran out of text: a copy or a download that did not finish
        return ExportError(f"{path}: the JSON ends early (the file is truncated); export or copy it again")
    return ExportError(f"{path}: not JSON ({words})")


def _header(events: Iterator[tuple[str, Any]], path: Path) -> tuple[dict[str, Any], int | None]:
    """Reads every event of the file: its top-level ``guild`` and ``channel`` and how many messages it holds (None
    without ``messages``); an ExportError when it is not an object, nests too deep, or ``messages`` is no list."""
    first = next(events, None)
    if first is None or first[0] != "start_map":
        raise ExportError(f"{path}: not a DiscordChatExporter JSON export (top level is not an object)")
    header: dict[str, Any] = {}
    messages: int | None = None
    depth, key = 1, ""
    builder: Any = None  # ijson.ObjectBuilder for the header value being read
    for event, value in events:
        if depth > 2 and builder is None:  # within a message: most of the file, where only the depth counts
            if event in _OPENS:
                depth += 1
                if depth > MAX_DEPTH:
                    raise ExportError(f"{path}: not a DiscordChatExporter JSON export (it nests more than "
                                      f"{MAX_DEPTH} levels deep)")
            elif event in _CLOSES:
                depth -= 1
            continue
        if depth == 1:
            if event == "map_key":
                key = value
                builder = ijson.ObjectBuilder() if key in _HEADER_KEYS else None
                continue
            if key == "messages" and event != "end_map":
                if event != "start_array":
                    raise ExportError(f"{path}: not a DiscordChatExporter JSON export (missing or bad 'messages' "
                                      "is not a list)")
                messages = messages or 0
        elif depth == 2 and key == "messages" and event not in _CLOSES:
            messages = (messages or 0) + 1  # an element of the list begins
        if builder is not None:
            builder.event(event, value)
        if event in _OPENS:
            depth += 1
            if depth > MAX_DEPTH:
                raise ExportError(f"{path}: not a DiscordChatExporter JSON export (it nests more than {MAX_DEPTH} "
                                  "levels deep)")
        elif event in _CLOSES:
            depth -= 1
        if depth == 1 and builder is not None:
            header[key], builder = builder.value, None
    return header, messages


class ExportFile:
    """One export, open: ``channel`` (from the header) once the whole file was checked, then ``batches()``.

    Blocking: use it off the event loop. ``stop`` (set from any thread) ends a reading at its next read with
    ``ReadStopped``.
    """

    def __init__(self, path: Path, file: BinaryIO, stop: threading.Event | None) -> None:
        self.path = path
        self._file = file
        self._stop = stop
        self._identity = _identity(file)
        try:
            events = ijson.basic_parse(self._reading(), buf_size=READ_BYTES, use_float=True)
            header, messages = _header(events, path)
        except ijson.JSONError as error:
            raise _json_error(path, error) from None
        self.channel = _channel(header, messages, path)

    def _reading(self) -> _CheckedBytes:
        self._file.seek(0)
        return _CheckedBytes(self._file, self.path, self._stop)

    def batches(self, size: int) -> Iterator[ExportBatch]:
        """The file's messages, ``size`` at a time (the last batch may be short, or empty for a file without any).

        A message that cannot be read (no id, text that is not text, a bad time) is rejected alone.
        """
        if _identity(self._file) != self._identity:
            # Checked once; the messages are read without counting the depth again, so they must be what was checked.
            raise ExportError(f"{self.path}: changed while it was read; import it again once it is complete")
        batch, position = _Gathering(), 0
        try:
            for position, message in enumerate(ijson.items(self._reading(), "messages.item", buf_size=READ_BYTES,
                                                            use_float=True), start=1):
                batch.add(message, position, self.channel)
                if batch.size >= size:
                    yield batch.done(position)
                    batch = _Gathering()
        except ijson.JSONError as error:  # it was whole when checked: changed since
            raise _json_error(self.path, error) from None
        if batch.size:
            yield batch.done(position)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ExportFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def _identity(file: BinaryIO) -> tuple[int, int, int, int]:
    status = os.fstat(file.fileno())
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


class _Gathering:
    """The batch being read."""

    def __init__(self) -> None:
        self.records: list[MessageRecord] = []
        self.rejected: list[RejectedMessage] = []
        self.notices = 0

    @property
    def size(self) -> int:
        return len(self.records) + len(self.rejected) + self.notices

    def add(self, message: object, position: int, channel: ExportedChannel) -> None:
        try:
            if not isinstance(message, dict):
                raise TypeError("it is not an object")
            record = _record(message, channel)
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as error:
            message_id = message.get("id") if isinstance(message, dict) else None
            self.rejected.append(RejectedMessage(str(message_id) if message_id else f"#{position}", _reason(error)))
            return
        if record is None:
            self.notices += 1
        else:
            self.records.append(record)

    def done(self, read: int) -> ExportBatch:
        return ExportBatch(self.records, self.rejected, self.notices, read)


def open_export(path: Path, stop: threading.Event | None = None) -> ExportFile:
    """Opens and checks one export file (blocking: call it off the event loop); an ExportError says in one line what
    is wrong with the file, ``ReadStopped`` that ``stop`` was set meanwhile."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - ExportFile owns it from here
    except FileNotFoundError:
        raise ExportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ExportError(f"{path}: is a folder, not an export file") from None
    except OSError as error:
        raise ExportError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        return ExportFile(path, file, stop)
    except BaseException:
        file.close()
        raise
