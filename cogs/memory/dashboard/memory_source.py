"""``MemorySource``: the ``DashboardSource`` over the process's ``Memory``, through Memory's public methods only.

Forgetting, settings and profile switches are the same core calls the slash commands make. A search shows the
recall's own record: its hits (each with what its first-stage score is made of) and what each stage took.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import psutil

from ..metrics import MetricsRecorder, RecallSample
from ..privacy.ledger import ErasureNotRecorded
from ..records import SearchFilters
from ..runtime.profile import MemoryProfile, ProfileError, list_profiles
from ..store.rows import PerformanceMinute
from ..vectors.embedding import EmbeddingModelError
from .source import (ActionNotDone, BrowsePage, CatchUpView, ForgetKind, ForgetPreview, ForgetResult, GuildOverview,
                     MemberView, ProcessInfo, ProfileSwitchResult, ProfileView, SearchExplanation, SearchRequest,
                     SettingsChange, SettingsView, SourceUnavailable, StoredMessageView)

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("CatchUpLike", "MemorySource")

MEMORY_LOADING = "Memory is still opening (loading its models); try again in a minute."


class CatchUpLike(Protocol):
    """What the cog's ``CatchUpStatus`` carries that the Overview shows."""

    channels: int
    done: int
    failed: int
    finished_at: datetime | None


def _file_bytes(*paths: Path) -> int:
    return sum(path.stat().st_size for path in paths if path.exists())


class MemorySource:
    """``memory`` is called on each use: the bot opens Memory after connecting and may not have it yet."""

    def __init__(self, memory: Callable[[], Memory | None], *, profiles_dir: Path,
                 recorder: MetricsRecorder | None = None,
                 catch_up: Callable[[int], CatchUpLike | None] | None = None,
                 guild_name: Callable[[int], str | None] | None = None,
                 save_profile_choice: Callable[[str], Awaitable[None]] | None = None,
                 profile_switch_refused: str | None = None) -> None:
        self._memory = memory
        self._profiles_dir = profiles_dir
        self._recorder = recorder
        self._catch_up = catch_up
        self._guild_name = guild_name
        self._save_profile_choice = save_profile_choice
        self._profile_switch_refused = profile_switch_refused  # why this process never switches (the standalone's)

    def memory(self) -> Memory:
        memory = self._memory()
        if memory is None:
            raise SourceUnavailable(MEMORY_LOADING)
        return memory

    # -- overview -------------------------------------------------------------------------------------------

    async def guild_overviews(self) -> Sequence[GuildOverview]:
        memory = self.memory()
        return [await self._overview(memory, guild_id) for guild_id in await memory.guild_ids()]

    async def _overview(self, memory: Memory, guild_id: int) -> GuildOverview:
        stats = await memory.stats(guild_id)
        settings = await memory.settings(guild_id)
        catch_up = self._catch_up(guild_id) if self._catch_up is not None else None
        return GuildOverview(
            guild_id=guild_id, name=self._name_of(memory, guild_id),
            messages=stats.messages, channels=len(await memory.store.channel_ids(guild_id)),
            vectors=stats.index.vectors, vectors_waiting=max(stats.messages - stats.index.vectors, 0),
            catch_up=None if catch_up is None else CatchUpView(catch_up.channels, catch_up.done, catch_up.failed,
                                                               catch_up.finished_at),
            retention_days=settings.retention_days, index_file_bytes=stats.index.file_bytes,
            index_memory_bytes=stats.index.memory_bytes)

    async def process_info(self) -> ProcessInfo:
        memory = self.memory()
        profile, reranker = memory.profile, memory.reranker
        status = reranker.status() if reranker is not None else None
        database_bytes = 0
        db_path = memory.db_path  # None on PostgreSQL: the database is the server's
        if db_path is not None:
            database_bytes = await asyncio.to_thread(_file_bytes, db_path, db_path.with_name(db_path.name + "-wal"))
        return ProcessInfo(
            profile=profile.name, embedding_model=memory.embedder.display_name,
            reranker_model=status.model if status else None,
            reranker_backend=(f"{status.backend} {status.dtype}" + (f" ({status.precision})" if status.precision else "")
                              if status and status.backend else None),
            store_backend="sqlite" if db_path is not None else "postgresql", device=memory.embedder.device, dtype=profile.dtype,
            rss_bytes=psutil.Process().memory_info().rss, database_bytes=database_bytes,
            ingest_backlog=memory.queued)

    async def ingest_totals(self) -> tuple[int, int]:
        memory = self.memory()
        stored = 0
        for guild_id in await memory.guild_ids():
            stored += (await memory.stats(guild_id)).messages
        return stored, memory.queued

    def _name_of(self, memory: Memory, guild_id: int) -> str | None:
        """The name Discord gives now (the bot's), else the last one memory saw (a CLI's dashboard)."""
        name = self._guild_name(guild_id) if self._guild_name else None
        return name if name is not None else memory.names.guild_name(guild_id)

    async def channel_ids(self, guild_id: int) -> Sequence[int]:
        return sorted(await self.memory().store.channel_ids(guild_id))

    async def channel_names(self, guild_id: int) -> Mapping[int, str]:
        return self.memory().names.channel_names(guild_id)

    # -- search and browse ----------------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> SearchExplanation:
        filters = SearchFilters(
            guild_id=request.guild_id,
            channel_ids=frozenset({request.channel_id}) if request.channel_id is not None else None,
            author_ids=frozenset({request.author_id}) if request.author_id is not None else None,
            after=request.after, before=request.before)
        recall = await self.memory().recall(request.query, filters, request.limit, rerank=request.rerank)
        if self._recorder is not None:
            self._recorder.record_recall(RecallSample.of(recall))
        return SearchExplanation(request, recall)

    async def browse(self, guild_id: int, channel_id: int, before: datetime | None, limit: int,
                     before_id: int | None = None) -> BrowsePage:
        memory = self.memory()
        # One more than asked, to know whether an older page exists; a page ends on a (time, id) pair, so messages
        # that share a timestamp across the boundary are not skipped.
        rows = await memory.history.recent_messages(guild_id, channel_id, before or datetime.now(UTC), limit + 1,
                                                    before_id if before is not None else None)
        # The author is not in the history row: one read for the page's authors.
        authors = await memory.store.message_authors([row.message_id for row in rows[:limit]])
        views = []
        for row in rows[:limit]:
            author_id, author_name = authors.get(row.message_id, (None, None))
            views.append(StoredMessageView(
                message_id=row.message_id, author_name=author_name, author_id=author_id,
                content=row.content, created_at=datetime.fromtimestamp(row.created_at, UTC),
                edited_at=datetime.fromtimestamp(row.edited_at, UTC) if row.edited_at is not None else None))
        more = len(rows) > limit and views
        return BrowsePage(guild_id, channel_id, tuple(views), views[-1].created_at if more else None,
                          views[-1].message_id if more else None)

    # -- controls -------------------------------------------------------------------------------------------

    async def member_names(self, guild_id: int) -> Sequence[MemberView]:
        return [MemberView(author.author_id, author.name, author.messages, author.last_at)
                for author in await self.memory().store.author_names(guild_id)]

    async def forget_preview(self, kind: ForgetKind, guild_id: int, target_id: int) -> ForgetPreview:
        memory = self.memory()
        store = memory.store
        if kind == "guild":
            return ForgetPreview(await store.count_messages(guild_id))
        if kind == "message":
            stored = await store.message(target_id)
            if stored is None or stored.guild_id != guild_id:
                return ForgetPreview(0)
            count, newest_id = 1, stored.message_id
        else:
            refs = await (store.refs_for_author(guild_id, target_id) if kind == "member"
                          else store.refs_for_channel(guild_id, target_id))
            if not refs:
                return ForgetPreview(0)
            count, newest_id = len(refs), max(refs, key=lambda ref: (ref.created_at, ref.message_id)).message_id
        message = await store.message(newest_id)
        author_id, author_name = (await store.message_authors([newest_id])).get(newest_id, (None, None))
        if message is None:  # forgotten meanwhile
            return ForgetPreview(count, author_id, author_name)
        return ForgetPreview(count, author_id, author_name, message.channel_id,
                             memory.names.channel_names(guild_id).get(message.channel_id), message.content)

    async def forget(self, kind: ForgetKind, guild_id: int, target_id: int) -> ForgetResult:
        try:
            count = await self._forget(kind, guild_id, target_id)
        except ErasureNotRecorded as error:  # the ledger first: when it cannot be written, nothing was forgotten
            raise ActionNotDone(f"Nothing was forgotten: {error}. Free some space (or make it writable), then try "
                                "again.") from error
        erased = await self.memory().purge()  # "forgot" means gone from the files too, as the slash commands promise
        return ForgetResult(kind, guild_id, target_id, count, erased)

    async def _forget(self, kind: ForgetKind, guild_id: int, target_id: int) -> int:
        memory = self.memory()
        if kind == "message":
            stored = await memory.store.message(target_id)
            return await memory.forget_message(guild_id, target_id) \
                if stored is not None and stored.guild_id == guild_id else 0
        if kind == "member":
            return await memory.forget_author(guild_id, target_id)
        if kind == "channel":
            return await memory.forget_channel(guild_id, target_id)
        return await memory.forget_guild(guild_id)

    async def performance_minutes(self, origin: str, since: float) -> Sequence[tuple[float, str]]:
        return [(row.minute, row.figures) for row in await self.memory().store.performance_minutes(origin, since)]

    async def keep_performance_minutes(self, origin: str, minutes: Sequence[tuple[float, str]], keep: int) -> None:
        memory = self.memory()
        rows = [PerformanceMinute(origin, minute, figures) for minute, figures in minutes]
        async with memory.ingest.write_lock:  # between ingest's transactions, on SQLite's one writer connection
            await memory.store.keep_performance_minutes(rows, keep)

    async def settings(self, guild_id: int) -> SettingsView:
        current = await self.memory().settings(guild_id)
        return SettingsView(current.auto_recall, current.recall_channel_ids, current.capture_disabled_channel_ids,
                            current.retention_days, current.forget_on_leave, current.store_bot_messages)

    async def change_settings(self, guild_id: int, change: SettingsChange) -> SettingsView:
        memory = self.memory()
        changes: dict[str, Any] = {}
        if change.auto_recall is not None:
            changes["auto_recall"] = change.auto_recall
        if change.retention_days is not None:
            changes["retention_days"] = change.retention_days or None
        if change.forget_on_leave is not None:
            changes["forget_on_leave"] = change.forget_on_leave
        if change.store_bot_messages is not None:
            changes["store_bot_messages"] = change.store_bot_messages
        if changes:
            await memory.save_settings(guild_id, (await memory.settings(guild_id)).with_changes(**changes))
        return await self.settings(guild_id)

    async def _profiles(self) -> dict[str, MemoryProfile]:
        return {profile.name: profile for profile in await asyncio.to_thread(list_profiles, self._profiles_dir)}

    async def profiles(self) -> Sequence[ProfileView]:
        current = self.memory().profile.name
        return [ProfileView(name, profile.description, name == current)
                for name, profile in (await self._profiles()).items()]

    async def switch_profile(self, name: str) -> ProfileSwitchResult:
        memory = self.memory()
        old = memory.profile.name
        if self._profile_switch_refused is not None:
            return ProfileSwitchResult(old, name, False, self._profile_switch_refused)
        new = (await self._profiles()).get(name)
        if new is None:
            return ProfileSwitchResult(old, name, False, f"there is no profile named {name!r}")
        try:
            await memory.switch_profile(new)
        except (ProfileError, EmbeddingModelError) as error:
            return ProfileSwitchResult(old, name, False, str(error))
        if self._save_profile_choice is not None:
            await self._save_profile_choice(name)
        return ProfileSwitchResult(old, name, True, None)

