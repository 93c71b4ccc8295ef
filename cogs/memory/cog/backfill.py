"""/memory backfill's work: read a channel's history into memory, newest first, saving how far back it got as it
goes, and reporting progress for as long as the run takes."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import discord

from ..ingest_report import FlushReport, IngestError
from . import replies
from .capture import is_chat_message, record_from_message

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("ProgressReport", "backfill_channel", "read_history")

log = logging.getLogger(__name__)

# Progress is shown, and saved, every this many messages read.
PROGRESS_EVERY = 250
# Discord's interaction token lasts 15 minutes: after 14, progress moves from the command's private reply to a
# message in the channel the command was run in.
INTERACTION_EDITS_FOR_S = 14 * 60


class ProgressReport:
    """Where a backfill says how it is doing: the command's own reply while its token lasts, then a channel message.

    A run over a big history can take hours; the interaction token that edits the command's reply does not.
    """

    def __init__(self, interaction: discord.Interaction) -> None:
        self._interaction = interaction
        self._edits_until = time.monotonic() + INTERACTION_EDITS_FOR_S
        self._message: discord.Message | None = None

    async def show(self, content: str) -> None:
        if self._message is None and time.monotonic() < self._edits_until:
            try:
                await self._interaction.edit_original_response(content=content)
                return
            except discord.HTTPException as error:  # the token expired early, or Discord refused the edit
                log.info("Backfill progress moves to a channel message: %s", error)
        await self._show_in_channel(content)

    async def _show_in_channel(self, content: str) -> None:
        try:
            if self._message is None:
                self._message = await self._interaction.channel.send(content)
            else:
                await self._message.edit(content=content)
        except discord.HTTPException as error:  # the run goes on; only its progress goes unseen
            log.warning("Backfill progress not shown in channel %s: %s", self._interaction.channel_id, error)


class _NotStored(Exception):
    """Messages the run read could not be stored (a failed write); its progress is saved only up to before them."""

    def __init__(self, read: int, report: FlushReport) -> None:
        super().__init__(report.error)
        self.read, self.report = read, report


async def backfill_channel(memory: Memory, guild_id: int, channel: discord.abc.Messageable, limit: int,
                           report: ProgressReport) -> None:
    """Run ``read_history`` and say how it ended: finished, or stopped by messages that could not be stored
    (ingest logged why and keeps trying them; never "finished" for work that did not happen)."""
    try:
        read = await read_history(memory, guild_id, channel, limit, report)
    except _NotStored as stopped:
        await report.show(replies.BACKFILL_NOT_STORED.format(
            channel=channel.mention, count=stopped.read, not_stored=len(stopped.report.not_stored),
            reason=stopped.report.error))
        return
    await report.show(replies.BACKFILL_DONE.format(count=read, channel=channel.mention))


async def read_history(memory: Memory, guild_id: int, channel: discord.abc.Messageable, limit: int,
                       report: ProgressReport) -> int:
    """Reads up to ``limit`` messages, newest first (what members most likely ask about), from where the last run
    stopped; returns how many it read. Every ``PROGRESS_EVERY`` messages the ones read so far are stored and the
    point reached is saved, so a run cut short (a restart, an error) loses at most that much."""
    resume = (await memory.settings(guild_id)).backfill_progress.get(channel.id)
    read, oldest = 0, resume
    try:
        async for message in channel.history(limit=limit, before=discord.Object(resume) if resume else None):
            oldest = message.id if oldest is None else min(oldest, message.id)
            read += 1
            if is_chat_message(message) and not await memory.is_opted_out(guild_id, message.author.id):
                await memory.add(record_from_message(message))
            if read % PROGRESS_EVERY == 0:
                await _save_progress(memory, guild_id, channel.id, oldest)
                await report.show(replies.BACKFILL_PROGRESS.format(count=read, channel=channel.mention))
        await _save_progress(memory, guild_id, channel.id, oldest)
    except IngestError as error:
        raise _NotStored(read, error.report) from error
    return read


async def _save_progress(memory: Memory, guild_id: int, channel_id: int, oldest: int | None) -> None:
    """Stores what was read, then records the oldest message reached: the next run starts before it.

    Raises IngestError when a write failed: nothing is recorded, so the next run reads those messages again. A
    message rejected for its data (logged by ingest) never stores: the run goes on past it.
    """
    try:
        await memory.flush()
    except IngestError as error:
        if error.report.not_stored:
            raise
    settings = await memory.settings(guild_id)
    if oldest is None or settings.backfill_progress.get(channel_id) == oldest:
        return
    progress = {**settings.backfill_progress, channel_id: oldest}
    await memory.save_settings(guild_id, settings.with_changes(backfill_progress=progress))
