"""Catch-up: after every new gateway session (the start, a reconnect Discord could not resume), each captured
channel's history is read forward from where memory stopped, in the background and gently, so what was said, edited
or deleted while the bot was away reaches memory too, and so does what was said in threads archived meanwhile. Progress
is saved per page: a restart goes on from there."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import discord
from discord.ext import commands

from .reconcile import PAGE_SIZE, HistoryChannel, PageResult, Reconciler, parent_id, read_page, store_read
from ..store.history import CatchUpProgress
from ..ingest.report import IngestError

if TYPE_CHECKING:
    from bot import MemoryBot

    from ..memory import Memory

__all__ = ("CatchUp", "CatchUpStatus", "heard_until_now")

log = logging.getLogger(__name__)

# The stored messages checked again for edits and deletes: this many newest of each channel, one request's worth.
WINDOW_MESSAGES = PAGE_SIZE
# Between two requests for history: discord.py waits out any 429 itself, this keeps a big server's catch-up from
# spending the bot's request budget all at once.
PAGE_PAUSE_S = 0.5
# A channel whose history could not be read (Discord errors) is tried again after these pauses; after the last, the
# next gateway session goes on from its saved place.
RETRY_DELAYS_S = (60.0, 300.0, 900.0)
# Threads archived while the bot was away read per channel and catch-up, newest archived first: one listing
# request's worth (Discord's most), each costing a history request and a pause; /memory backfill reads the rest,
# a thread at a time.
ARCHIVED_THREADS_PER_CHANNEL = 100

CatchableChannel = HistoryChannel
ThreadParent = discord.TextChannel | discord.ForumChannel
# A forum is caught up for its archived posts only: its messages are all in its posts (threads).
CatchUpTarget = CatchableChannel | discord.ForumChannel


@dataclass(frozen=True, slots=True)
class CatchUpStatus:
    """A guild's latest catch-up, as ``/memory stats`` shows it."""

    channels: int
    done: int = 0
    failed: int = 0
    read: int = 0
    added: int = 0
    edited: int = 0
    deleted: int = 0
    finished_at: datetime | None = None

    def counted(self, result: PageResult) -> CatchUpStatus:
        return dataclasses.replace(self, read=self.read + result.read, added=self.added + result.added,
                                   edited=self.edited + result.edited, deleted=self.deleted + result.deleted)


def _readable(channel: CatchUpTarget) -> bool:
    permissions = channel.permissions_for(channel.guild.me)
    return permissions.view_channel and permissions.read_message_history


def captured_channels(guild: discord.Guild, disabled: frozenset[int]) -> list[CatchUpTarget]:
    """Every channel live capture stores from that the bot may read: text channels, voice and stage channels' text
    chats, the active threads (forum posts too), and the forums (for their archived posts). Capture-disabled ones
    are left out, as live capture does."""
    channels: list[CatchUpTarget] = [*guild.text_channels, *guild.voice_channels, *guild.stage_channels,
                                     *guild.threads, *guild.forums]
    return [channel for channel in channels if channel.id not in disabled and _readable(channel)]


async def _archived_since(parent: ThreadParent, since: datetime) -> list[discord.Thread]:
    """The parent's threads archived at ``since`` or later that the bot may read, newest archived first, at most
    ``ARCHIVED_THREADS_PER_CHANNEL``: public ones (forum posts), and private ones (every one with Manage Threads,
    else those the bot joined). A listing Discord refuses is left out."""
    listings = [(False, False)]  # (private, joined): the public threads, and a text channel's private ones
    if isinstance(parent, discord.TextChannel) and not parent.is_news():  # announcement channels have no private ones
        listings.append((True, not parent.permissions_for(parent.guild.me).manage_threads))
    found: dict[int, discord.Thread] = {}
    for private, joined in listings:
        try:
            async for thread in _archived_listing(parent, private, joined):
                archived_at = thread.archive_timestamp
                if archived_at >= since:
                    found[thread.id] = thread
                elif not joined:  # the others come newest archived first; joined ones by id
                    break
        except discord.Forbidden:
            log.info("Catch-up: the archived threads of channel %d (%s) are not listed to the bot; skipped",
                     parent.id, "private" if private else "public")
    newest = sorted(found.values(), key=lambda thread: thread.archive_timestamp, reverse=True)
    return newest[:ARCHIVED_THREADS_PER_CHANNEL]


def _archived_listing(parent: ThreadParent, private: bool, joined: bool) -> AsyncIterator[discord.Thread]:
    """One listing of the parent's archived threads; a forum lists public ones only."""
    if isinstance(parent, discord.TextChannel):
        return parent.archived_threads(limit=ARCHIVED_THREADS_PER_CHANNEL, private=private, joined=joined)
    return parent.archived_threads(limit=ARCHIVED_THREADS_PER_CHANNEL)


async def _heard_to_its_end(memory: Memory, guild_id: int, thread: discord.Thread, since: datetime) -> bool:
    """Memory holds or waits to store the archived thread's last message, or an earlier catch-up read past it:
    nothing was said in it since, so it costs no request (a quiet parent's anchor stays put, and its threads are
    listed again at every catch-up)."""
    last = thread.last_message_id
    if last is None:
        return False
    queued = memory.ingest.newest_queued(guild_id, thread.id, since)  # asked before the store, as catch-up does
    saved = await memory.history.catchup_progress(thread.id)
    marks = (queued, await memory.history.newest_in_channel(guild_id, thread.id),
             saved.position if saved is not None and saved.finished else None)
    return any(mark is not None and mark >= last for mark in marks)


async def heard_until_now(memory: Memory, guild_id: int, channel: CatchUpTarget) -> None:
    """Marks ``channel`` as heard up to now: capture was off until now, and what was said meanwhile stays unstored.

    A catch-up cut short keeps its place: what was said before capture went off is still unread, and the reading
    leaves the capture-off span out by its exclusion."""
    saved = await memory.history.catchup_progress(channel.id)
    if saved is not None and not saved.finished:
        return
    now = discord.utils.time_snowflake(discord.utils.utcnow())
    await memory.history.save_catchup(CatchUpProgress(channel.id, guild_id, parent_id(channel), now, now,
                                                      finished=True))


class CatchUp(commands.Cog, name="MemoryCatchUp"):
    """Reads what each captured channel said while the bot was away, after every new gateway session.

    A RESUME replays every missed event, so only ``on_ready`` (a new session) starts a catch-up; a catch-up still
    running then stops where it is (its place is saved) and the new one goes on from there.
    """

    def __init__(self, bot: MemoryBot) -> None:
        self.bot = bot
        self.page_pause_s = PAGE_PAUSE_S
        self.retry_delays_s: tuple[float, ...] = RETRY_DELAYS_S
        self.status: dict[int, CatchUpStatus] = {}
        self._session_started: datetime | None = None
        self._task: asyncio.Task[None] | None = None
        # The archived threads this catch-up counted in its guild's status (a retry lists them again).
        self._threads_counted: set[int] = set()

    async def cog_unload(self) -> None:
        await self._stop()

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    @commands.Cog.listener()
    async def on_connect(self) -> None:
        # READY arrived; messages of this session may be stored before on_ready. What was stored before this moment
        # is what the bot heard before the session, where catch-up starts.
        self._session_started = discord.utils.utcnow()

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        self.start()

    @commands.Cog.listener()
    async def on_resumed(self) -> None:
        log.info("Gateway session resumed: Discord replays what was missed, no catch-up needed")

    def start(self) -> asyncio.Task[None]:
        """Starts a catch-up in the background (stopping one still running first)."""
        since = self._session_started or discord.utils.utcnow()
        self._task = asyncio.create_task(self._run(self._task, since), name="memory-catch-up")
        return self._task

    async def wait(self) -> None:
        """Returns once the current catch-up has finished (its retries included)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _run(self, previous: asyncio.Task[None] | None, since: datetime) -> None:
        if previous is not None and not previous.done():
            previous.cancel()
            await asyncio.gather(previous, return_exceptions=True)
        await self.bot.memory_ready.wait()
        memory = self.bot.memory
        if memory is None:
            return
        try:
            await self._catch_up(memory, since)
        except asyncio.CancelledError:
            log.info("Catch-up stopped; the next one goes on from each channel's saved place")
            raise
        except Exception:
            log.exception("Catch-up failed; the next gateway session goes on from each channel's saved place")

    async def _catch_up(self, memory: Memory, since: datetime) -> None:
        started = time.monotonic()
        plans: list[tuple[discord.Guild, list[CatchUpTarget]]] = []
        self._threads_counted = set()
        for guild in list(self.bot.guilds):
            disabled = (await memory.settings(guild.id)).capture_disabled_channel_ids
            plans.append((guild, captured_channels(guild, disabled)))
            self.status[guild.id] = CatchUpStatus(channels=len(plans[-1][1]))
        log.info("Catch-up: reading %d channels in %d guilds for what was said while the bot was away",
                 sum(len(channels) for _, channels in plans), len(plans))
        # Every channel's place is saved before any is read: a catch-up stopped part way (a new session, a restart)
        # leaves each unread channel anchored at what was heard before this session, not at what is heard meanwhile.
        for guild, channels in plans:
            for channel in channels:
                await self._place(memory, guild, channel, since)
        failed = [(guild, channel) for guild, channels in plans for channel in channels
                  if not await self._channel(memory, guild, channel, since)]
        for delay in self.retry_delays_s:
            if not failed:
                break
            log.info("Catch-up: %d channels could not be read; trying them again in %.0f s", len(failed), delay)
            await asyncio.sleep(delay)
            failed = [(guild, channel) for guild, channel in failed
                      if not await self._channel(memory, guild, channel, since, retry=True)]
        now = discord.utils.utcnow()
        for guild, _ in plans:
            self.status[guild.id] = dataclasses.replace(self.status[guild.id], finished_at=now)
        summary = [self.status[guild.id] for guild, _ in plans]
        log.info("Catch-up finished in %.0f s: %d messages read, %d new, %d edited, %d deleted; %d channels unread",
                 time.monotonic() - started, sum(s.read for s in summary), sum(s.added for s in summary),
                 sum(s.edited for s in summary), sum(s.deleted for s in summary), len(failed))

    async def _channel(self, memory: Memory, guild: discord.Guild, channel: CatchUpTarget, since: datetime,
                       retry: bool = False) -> bool:
        """Catches one channel up (its archived threads too); False when it failed part way (it is tried again
        later, from its saved place)."""
        try:
            if channel.id not in (await memory.settings(guild.id)).capture_disabled_channel_ids:
                progress = await self._progress(memory, guild, channel, since)
                if progress is not None:
                    await self._catch_up_channel(memory, guild, channel, progress, since)
        except (discord.Forbidden, discord.NotFound):
            log.info("Catch-up: channel %d in guild %d is gone or its history unreadable; skipped", channel.id,
                     guild.id)
        except discord.HTTPException as error:
            log.warning("Catch-up: reading channel %d in guild %d failed (%s %s); its place is saved",
                        channel.id, guild.id, error.status, error.text or error)
            return self._failed(guild, retry)
        except IngestError as error:
            log.warning("Catch-up: channel %d in guild %d stopped: %s; its place is saved before them", channel.id,
                        guild.id, error)
            return self._failed(guild, retry)
        except Exception:
            log.exception("Catch-up of channel %d in guild %d failed; its place is saved", channel.id, guild.id)
            return self._failed(guild, retry)
        status = self.status[guild.id]
        self.status[guild.id] = dataclasses.replace(status, done=status.done + 1,
                                                    failed=status.failed - 1 if retry else status.failed)
        return True

    async def _catch_up_channel(self, memory: Memory, guild: discord.Guild, channel: CatchUpTarget,
                                progress: CatchUpProgress, since: datetime) -> None:
        """Reads the channel on from ``progress``, then the threads archived since its anchor. Its place stays
        unfinished until those are read too: a catch-up cut short goes on with the same anchor, so threads archived
        while the bot was away are not lost to messages this catch-up stored meanwhile."""
        parent = isinstance(channel, discord.TextChannel | discord.ForumChannel)
        if not isinstance(channel, discord.ForumChannel):
            progress = await self._read_forward(memory, guild, channel, progress, finish=not parent)
        if isinstance(channel, discord.TextChannel | discord.ForumChannel):
            await self._archived_threads(memory, guild, channel, progress, since)
            await memory.history.save_catchup(dataclasses.replace(progress, finished=True))

    async def _archived_threads(self, memory: Memory, guild: discord.Guild, parent: ThreadParent,
                                progress: CatchUpProgress, since: datetime) -> None:
        """Reads the parent's threads archived since its anchor (the newest message heard before the session, a
        moment the bot was there: a thread archived before it was heard live up to its archiving). Each is read on
        from what memory holds of it like a channel, its place saved like a channel's; a thread whose capture is off
        is left out, and what was forgotten stays out by its exclusion."""
        threads = await _archived_since(parent, discord.utils.snowflake_time(progress.anchor))
        await asyncio.sleep(self.page_pause_s)
        disabled = (await memory.settings(guild.id)).capture_disabled_channel_ids
        threads = [thread for thread in threads if thread.id not in disabled]
        uncounted = [thread for thread in threads if thread.id not in self._threads_counted]
        self._threads_counted.update(thread.id for thread in uncounted)
        status = self.status[guild.id]
        self.status[guild.id] = dataclasses.replace(status, channels=status.channels + len(uncounted))
        if threads:
            log.info("Catch-up: reading %d threads of channel %d in guild %d archived while the bot was away",
                     len(threads), parent.id, guild.id)
        for thread in threads:
            try:
                thread_progress = None
                if not await _heard_to_its_end(memory, guild.id, thread, since):
                    thread_progress = await self._progress(memory, guild, thread, since, progress.anchor)
                if thread_progress is not None:
                    await self._read_forward(memory, guild, thread, thread_progress)
            except (discord.Forbidden, discord.NotFound):
                log.info("Catch-up: archived thread %d in guild %d is gone or unreadable; skipped", thread.id,
                         guild.id)
            status = self.status[guild.id]
            self.status[guild.id] = dataclasses.replace(status, done=status.done + 1)

    async def _place(self, memory: Memory, guild: discord.Guild, channel: CatchUpTarget, since: datetime) -> None:
        """Saves where the channel's catch-up reads from; a failure is logged, and the reading tries it again."""
        try:
            await self._progress(memory, guild, channel, since)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Catch-up: saving the place of channel %d in guild %d failed", channel.id, guild.id)

    def _failed(self, guild: discord.Guild, retry: bool) -> bool:
        if not retry:
            status = self.status[guild.id]
            self.status[guild.id] = dataclasses.replace(status, failed=status.failed + 1)
        return False

    async def _progress(self, memory: Memory, guild: discord.Guild, channel: CatchUpTarget, since: datetime,
                        parent_anchor: int | None = None) -> CatchUpProgress | None:
        """Where this channel's catch-up reads from: its saved place if one was cut short, or else the last
        ``WINDOW_MESSAGES`` stored before the session (checked again), then everything after. The anchor is the
        newest message heard before the session: stored, or still queued to be stored (never a later one: what was
        said between them would be skipped). None when memory neither holds nor waits to store anything of the guild
        to start from (``/memory backfill`` reads such history).

        An archived thread memory holds nothing of starts at its parent's ``parent_anchor`` instead, saved before
        anything was read: the guild's newest stored message may by now be one this catch-up read, later than what
        was said in the thread while the bot was away."""
        saved = await memory.history.catchup_progress(channel.id)
        if saved is not None and not saved.finished:
            log.debug("Catch-up: channel %d goes on after message %d", channel.id, saved.position)
            return saved
        # The queue is asked before the store: a message heard before the session is in one or the other.
        queued = memory.ingest.newest_queued(guild.id, channel.id, since)
        queued_in_guild = memory.ingest.newest_queued(guild.id, None, since)
        recent = await memory.history.recent_messages(guild.id, channel.id, since, WINDOW_MESSAGES)
        heard = [mark for mark in (recent[0].message_id if recent else None, queued,
                                   saved.position if saved else None) if mark is not None]
        if not heard and parent_anchor is not None:
            heard = [parent_anchor]
        if not heard:  # a channel memory holds nothing of: new, or quiet; start where the guild's memory stops
            newest = [mark for mark in (await memory.history.newest_message_id(guild.id, since), queued_in_guild)
                      if mark is not None]
            if not newest:
                return None
            heard = [max(newest)]
        anchor = max(heard)
        position = min(anchor, recent[-1].message_id - 1) if recent else anchor
        progress = CatchUpProgress(channel.id, guild.id, parent_id(channel), position, anchor)
        await memory.history.save_catchup(progress)
        return progress

    async def _read_forward(self, memory: Memory, guild: discord.Guild, channel: CatchableChannel,
                            progress: CatchUpProgress, finish: bool = True) -> CatchUpProgress:
        """Reads the channel on to the present; its place is saved after every page, and marked finished at the end
        only with ``finish`` (a parent channel finishes once its archived threads are read too)."""
        reconciler = Reconciler(memory, guild.id, channel, add_after=progress.anchor)
        while True:
            page = await read_page(channel, after=progress.position, limit=PAGE_SIZE)
            last = progress.position if not page else page[-1].id
            finished = len(page) < PAGE_SIZE
            # The last page reaches the anchor: the newest message heard before the session may be the one deleted.
            result = await reconciler.apply(page, progress.position, max(last, progress.anchor) if finished else last)
            await store_read(memory)  # stored before the place is saved: a crash or a failed write reads it again
            progress = dataclasses.replace(progress, position=last, read=progress.read + result.read,
                                           added=progress.added + result.added, edited=progress.edited + result.edited,
                                           deleted=progress.deleted + result.deleted,
                                           finished=finished and finish)
            await memory.history.save_catchup(progress)
            self.status[guild.id] = self.status[guild.id].counted(result)
            log.debug("Catch-up of channel %d: read up to message %d (%d messages, %d new)", channel.id, last,
                      result.read, result.added)
            if finished:
                break
            await asyncio.sleep(self.page_pause_s)
        if progress.added or progress.edited or progress.deleted:
            log.info("Catch-up of channel %d in guild %d: %d messages read, %d new, %d edited, %d deleted",
                     channel.id, guild.id, progress.read, progress.added, progress.edited, progress.deleted)
        await asyncio.sleep(self.page_pause_s)
        return progress
