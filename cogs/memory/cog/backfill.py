"""/memory backfill's work: read a channel's history into memory in both directions from what earlier runs read,
saving how far it got as it goes, and reporting progress for as long as the run takes."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import TYPE_CHECKING

import discord

from . import replies
from .options import UserInputError
from .permissions import command_member
from .reconcile import PAGE_SIZE, HistoryChannel, Reconciler, parent_id, read_page, store_read
from ..store.history import BackfillProgress
from ..ingest.report import FlushReport, IngestError

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("BackfillInterrupted", "BackfillNotStored", "ProgressReport", "backfill_command", "read_history")

log = logging.getLogger(__name__)

# Progress is shown every this many messages read (and saved after every page).
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
        channel = self._interaction.channel
        try:
            if self._message is not None:
                await self._message.edit(content=content)
            elif isinstance(channel, discord.abc.Messageable):
                self._message = await channel.send(content)
            else:
                log.warning("Backfill progress not shown: channel %s takes no messages", self._interaction.channel_id)
        except discord.HTTPException as error:  # the run goes on; only its progress goes unseen
            log.warning("Backfill progress not shown in channel %s: %s", self._interaction.channel_id, error)


class BackfillInterrupted(Exception):
    """Discord stopped serving the history part way; what was read before is stored and its place saved."""

    def __init__(self, read: int, error: discord.HTTPException) -> None:
        super().__init__(f"stopped after {read} messages: {error}")
        self.read = read
        self.error = error


class BackfillNotStored(Exception):
    """Messages the run read could not be stored (a failed write); its place is saved only up to before them."""

    def __init__(self, read: int, report: FlushReport) -> None:
        super().__init__(report.error)
        self.read, self.report = read, report


async def backfill_command(memory: Memory, interaction: discord.Interaction, channel: HistoryChannel, limit: int,
                           running: set[int]) -> None:
    """/memory backfill: reads ``channel``'s history (``running``: the channels being read now) and says how it went:
    finished, cut short by Discord, or stopped by messages that could not be stored (ingest logged why and keeps
    trying them; never "finished" for work that did not happen).

    A channel whose capture is off is refused: memory would not store what it says live either.
    """
    guild_id = command_member(interaction).guild.id
    if channel.id in running:
        raise UserInputError(replies.BACKFILL_RUNNING.format(channel=channel.mention))
    if channel.id in (await memory.settings(guild_id)).capture_disabled_channel_ids:
        raise UserInputError(replies.BACKFILL_CAPTURE_OFF.format(channel=channel.mention))
    report = ProgressReport(interaction)
    await interaction.response.send_message(replies.BACKFILL_STARTED.format(channel=channel.mention), ephemeral=True)
    running.add(channel.id)
    try:
        read = await read_history(memory, guild_id, channel, limit, report)
    except BackfillInterrupted as stopped:
        error = stopped.error
        log.warning("Backfill of channel %d stopped after %d messages: %s", channel.id, stopped.read, error)
        await report.show(replies.BACKFILL_FAILED.format(channel=channel.mention, count=stopped.read,
                                                         status=error.status, error=error.text or "no details"))
        return
    except BackfillNotStored as stopped:
        await report.show(replies.BACKFILL_NOT_STORED.format(
            channel=channel.mention, count=stopped.read, not_stored=len(stopped.report.not_stored),
            reason=stopped.report.error))
        return
    finally:
        running.discard(channel.id)
    await report.show(replies.BACKFILL_DONE.format(count=read, channel=channel.mention))


async def read_history(memory: Memory, guild_id: int, channel: HistoryChannel, limit: int,
                       report: ProgressReport) -> int:
    """Reads up to ``limit`` messages and returns how many it read: first forward from the newest message the last
    run read (what was said since, a gap an outage left), then back from the oldest (further into the past).

    Memory ends up matching every page read: what it lacks is stored (opted-out members aside), edits are applied,
    and what Discord no longer has is forgotten. Each page is stored and its place saved before the next is read,
    so a run cut short (a restart, an error) loses nothing it read. Raises ``BackfillInterrupted`` when Discord fails,
    ``BackfillNotStored`` when a write fails (the place is then saved only up to before that page).
    """
    progress = await memory.history.backfill_progress(channel.id)
    if progress is None:
        progress = BackfillProgress(channel.id, guild_id, parent_id(channel))
    run = _Run(memory, Reconciler(memory, guild_id, channel), report, guild_id, channel, limit)
    try:
        if progress.newest_id is not None:
            progress = await run.forward(progress)
        if not progress.reached_start:
            await run.backward(progress)
    except discord.HTTPException as error:
        raise BackfillInterrupted(run.read, error) from error
    except IngestError as error:
        raise BackfillNotStored(run.read, error.report) from error
    return run.read


class _Run:
    """One backfill run: pages read in one direction, each stored and its place saved, progress shown as it goes."""

    def __init__(self, memory: Memory, reconciler: Reconciler, report: ProgressReport, guild_id: int,
                 channel: HistoryChannel, limit: int) -> None:
        self._memory = memory
        self._guild_id = guild_id
        self._reconciler = reconciler
        self._report = report
        self._channel = channel
        self._limit = limit
        self.read = 0

    async def forward(self, progress: BackfillProgress) -> BackfillProgress:
        """Pages after ``newest_id`` to the present (or the limit)."""
        while self.read < self._limit and progress.newest_id is not None:
            wanted = min(PAGE_SIZE, self._limit - self.read)
            stored_before = await self._newest_stored()
            page = await read_page(self._channel, after=progress.newest_id, limit=wanted)
            newest = page[-1].id if page else progress.newest_id
            reached_present = len(page) < wanted
            await self._apply(page, progress.newest_id, max(newest, stored_before) if reached_present else newest)
            progress = await self._save(dataclasses.replace(progress, newest_id=newest))
            if reached_present:
                break
        return progress

    async def backward(self, progress: BackfillProgress) -> BackfillProgress:
        """Pages before ``oldest_id`` (before the present on a first run) to the channel's start (or the limit)."""
        while self.read < self._limit and not progress.reached_start:
            wanted = min(PAGE_SIZE, self._limit - self.read)
            stored_before = await self._newest_stored()
            page = await read_page(self._channel, before=progress.oldest_id, limit=wanted)
            reached_start = len(page) < wanted
            # The span this page covers: from its oldest message (or the channel's start) to where the last one began,
            # or to the present on a first run.
            after = 0 if reached_start else page[0].id - 1
            if progress.oldest_id is not None:
                upto = progress.oldest_id - 1
            else:
                upto = max(page[-1].id if page else 0, stored_before)
            await self._apply(page, after, upto)
            # A first run's first page is also the newest read: the next run reads forward from there (from the
            # channel's start if it was empty).
            newest = progress.newest_id if progress.newest_id is not None else (page[-1].id if page else 0)
            progress = await self._save(dataclasses.replace(
                progress, oldest_id=page[0].id if page else progress.oldest_id, newest_id=newest,
                reached_start=reached_start))
        return progress

    async def _newest_stored(self) -> int:
        """Taken before a request that reaches the present: every message stored by then existed before the request,
        so one of them the page lacks is gone from Discord (one stored after it may be newer than the page)."""
        return await self._memory.history.newest_in_channel(self._guild_id, self._channel.id) or 0

    async def _apply(self, page: list[discord.Message], after: int, upto: int) -> None:
        before = self.read
        await self._reconciler.apply(page, after, upto)
        self.read += len(page)
        if self.read // PROGRESS_EVERY > before // PROGRESS_EVERY:
            await self._report.show(replies.BACKFILL_PROGRESS.format(count=self.read, channel=self._channel.mention))

    async def _save(self, progress: BackfillProgress) -> BackfillProgress:
        """Stores what was read, then records how far the run got: the next run starts from there."""
        await store_read(self._memory)
        await self._memory.history.save_backfill(progress)
        return progress
