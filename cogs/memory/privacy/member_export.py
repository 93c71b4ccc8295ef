"""A member's export: everything memory holds of them in one guild (their messages in the channels they can read now,
their opt-out, the quotation log of their messages), streamed into zipped parts under a size limit.

The parts are written in a work folder and moved to their final folder in one rename when all are complete: a process
killed halfway leaves only the work folder, which the next export of that member clears, and nothing to send.
Never another member's text (a reply's target by id), never another guild, never a channel the member cannot read now
by name (its messages are counted, not carried). The schema is versioned; docs/privacy.md documents it."""

from __future__ import annotations

import asyncio
import html
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.member_rows import MemberMessage, Quotation
from .export_parts import PartWriter, iso
from .subject_access import MemberHoldings, Readable, SubjectAccess

__all__ = ("DISCORD_DEFAULT_LIMIT", "SCHEMA", "SCHEMA_VERSION", "ExportRequest", "ExportResult", "write_member_export")

SCHEMA = "discord-memory/member-export"
SCHEMA_VERSION = 1
DISCORD_DEFAULT_LIMIT = 10 * 1024 * 1024  # a server without boosts takes attachments up to 10 MiB
BATCH = 512  # messages handed to the file thread at a time


@dataclass(frozen=True, slots=True)
class ExportRequest:
    """Whose export, and what the caller knows of Discord now: the guild's name, what the member can read, the names
    of those channels (no other channel is named), and whether they opted out here."""

    guild_id: int
    guild_name: str
    member_id: int
    readable: Readable
    channel_names: Mapping[int, str]
    opted_out: bool


@dataclass(frozen=True, slots=True)
class ExportResult:
    """What an export wrote: its parts (none when memory holds nothing of the member), and what they carry."""

    parts: tuple[Path, ...]
    messages: int
    hidden_messages: int
    quotations: int
    holds_nothing: bool


def _work_folder(out_dir: Path, request: ExportRequest) -> Path:
    return out_dir / f".export-{request.guild_id}-{request.member_id}.partial"


def _prepare(out_dir: Path, work: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.rmtree(work, ignore_errors=True)  # what a killed export left: never sent, never reused
    work.mkdir(mode=0o700)


def _publish(out_dir: Path, work: Path, request: ExportRequest, parts: list[Path]) -> tuple[Path, ...]:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    final = out_dir / f"export-{request.guild_id}-{request.member_id}-{stamp}"
    suffix = 1
    while final.exists():
        final, suffix = final.with_name(f"export-{request.guild_id}-{request.member_id}-{stamp}-{suffix}"), suffix + 1
    work.rename(final)
    return tuple(final / part.name for part in parts)


def _summary_html(request: ExportRequest, holdings: MemberHoldings) -> str:
    opt_out = (f"yes, since {iso(holdings.opted_out_at) or 'a time not recorded'}" if holdings.opted_out else "no")
    rows = "".join(f"<li>{html.escape(request.channel_names.get(c.channel_id, f'channel {c.channel_id}'))}: "
                   f"{c.messages} messages since {iso(c.first_at)}</li>" for c in holdings.channels)
    return (f"<p>Opted out: {html.escape(opt_out)}</p>\n<p>Messages held in channels you can read: {holdings.messages}"
            f"</p>\n<ul>{rows}</ul>\n<p>Messages held in {holdings.hidden_channels} channel(s) you cannot read now: "
            f"{holdings.hidden_messages} (not included)</p>\n")


def _header(request: ExportRequest, holdings: MemberHoldings, generated_at: float, number: int) -> dict[str, Any]:
    header: dict[str, Any] = {"schema": SCHEMA, "version": SCHEMA_VERSION, "part": number,
                              "generated_at": iso(generated_at),
                              "guild": {"id": str(request.guild_id), "name": request.guild_name},
                              "member": {"id": str(request.member_id)}}
    if number == 1:
        header["settings"] = {"opted_out": holdings.opted_out, "opted_out_at": iso(holdings.opted_out_at)}
        header["held"] = {"messages": holdings.messages, "channels_not_shown": holdings.hidden_channels,
                          "messages_in_channels_not_shown": holdings.hidden_messages}
        header["channels"] = [{"id": str(c.channel_id), "name": request.channel_names.get(c.channel_id),
                               "messages": c.messages, "first_at": iso(c.first_at), "last_at": iso(c.last_at)}
                              for c in holdings.channels]
    return header


def _message(request: ExportRequest, message: MemberMessage) -> tuple[dict[str, Any], tuple[object, ...]]:
    name = request.channel_names.get(message.channel_id)
    reply = None if message.reply_to_id is None else str(message.reply_to_id)
    record = {"id": str(message.message_id), "channel_id": str(message.channel_id), "channel": name,
              "created_at": iso(message.created_at), "edited_at": iso(message.edited_at), "reply_to_id": reply,
              "content": message.content,
              "url": f"https://discord.com/channels/{request.guild_id}/{message.channel_id}/{message.message_id}"}
    return record, (iso(message.created_at), name, message.content, iso(message.edited_at), reply)


def _quotation(request: ExportRequest, quote: Quotation) -> tuple[dict[str, Any], tuple[object, ...]]:
    # Where the answer is, only in a channel the member can read now.
    answer = quote.answer_channel_id is not None and quote.answer_message_id is not None and (
        request.readable.everything or quote.answer_channel_id in request.readable.channel_ids)
    url = (f"https://discord.com/channels/{request.guild_id}/{quote.answer_channel_id}/{quote.answer_message_id}"
           if answer else None)
    record = {"message_id": str(quote.message_id), "channel_id": str(quote.channel_id),
              "quoted_at": iso(quote.quoted_at), "kind": quote.kind, "answer_url": url}
    return record, (iso(quote.quoted_at), quote.message_id, quote.kind, url)


async def write_member_export(access: SubjectAccess, request: ExportRequest, out_dir: Path, *,
                              part_limit: int = DISCORD_DEFAULT_LIMIT) -> ExportResult:
    """Write the member's export under ``out_dir`` in parts of at most ``part_limit`` bytes; the file work runs on a
    thread, a batch of messages at a time. Memory holding nothing of the member writes nothing."""
    holdings = await access.holdings(request.guild_id, request.member_id, request.readable,
                                     opted_out=request.opted_out, quotations=None)
    if holdings.holds_nothing:
        return ExportResult((), 0, 0, 0, True)
    work = _work_folder(out_dir, request)
    await asyncio.to_thread(_prepare, out_dir, work)
    generated_at = time.time()
    writer = PartWriter(work, f"memory-export-{request.guild_id}-{request.member_id}", part_limit,
                        lambda number: _header(request, holdings, generated_at, number),
                        f"What memory holds of you in {request.guild_name}", _summary_html(request, holdings))
    try:
        count = await _write_messages(access, request, writer)
        quotes = [_quotation(request, quote) for quote in holdings.quotations]
        await asyncio.to_thread(_write_batch, writer, "quotations", quotes)
        parts = await asyncio.to_thread(writer.finish)
        published = await asyncio.to_thread(_publish, out_dir, work, request, parts)
    except BaseException:
        await asyncio.shield(asyncio.to_thread(shutil.rmtree, work, True))
        raise
    return ExportResult(published, count, holdings.hidden_messages, len(quotes), False)


async def _write_messages(access: SubjectAccess, request: ExportRequest, writer: PartWriter) -> int:
    batch: list[tuple[dict[str, Any], tuple[object, ...]]] = []
    count = 0
    async for message in access.messages(request.guild_id, request.member_id, request.readable):
        batch.append(_message(request, message))
        count += 1
        if len(batch) >= BATCH:
            await asyncio.to_thread(_write_batch, writer, "messages", batch)
            batch = []
    await asyncio.to_thread(_write_batch, writer, "messages", batch)
    return count


def _write_batch(writer: PartWriter, section: Any, batch: list[tuple[dict[str, Any], tuple[object, ...]]]) -> None:
    for record, row in batch:
        writer.add(section, record, row)
