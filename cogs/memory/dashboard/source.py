"""What the dashboard needs from memory: the ``DashboardSource`` protocol and the frozen records that cross it.

The dashboard is typed against this protocol only; ``memory_source.MemorySource`` implements it over ``Memory``,
and the tests implement it with a fake. Nothing here imports the memory core but its shared records (``records``:
a search shows the recall's own record, its hits and what each stage took).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from ..records import Hit, Recall, RerankFigures, ScoreParts

__all__ = ("ActionNotDone", "BrowsePage", "CatchUpView", "DashboardSource", "ForgetKind", "ForgetPreview", "ForgetResult",
           "GuildOverview", "Hit", "MemberView", "ProcessInfo", "ProfileSwitchResult", "ProfileView", "Recall", "RerankFigures", "ScoreParts",
           "SearchExplanation", "SearchRequest", "SettingsChange", "SettingsView", "SourceUnavailable",
           "StoredMessageView")

ForgetKind = Literal["message", "member", "channel", "guild"]


class SourceUnavailable(RuntimeError):
    """Memory is not open (still loading its models, or it failed to open); the message says which."""


class ActionNotDone(SourceUnavailable):
    """Memory could not do what was asked and did nothing (a forget the erasure ledger could not record); the
    message says why and what to do. Answered as ``SourceUnavailable`` is: 503 and the message."""


@dataclass(frozen=True, slots=True)
class CatchUpView:
    """A guild's latest catch-up: channels planned, read to the end, failed; None ``finished_at`` while running."""

    channels: int
    done: int
    failed: int
    finished_at: datetime | None


@dataclass(frozen=True, slots=True)
class GuildOverview:
    guild_id: int
    name: str | None  # from Discord when the bot knows it
    messages: int
    channels: int  # channels (and threads) memory holds messages of
    vectors: int
    vectors_waiting: int  # stored messages without a vector yet
    catch_up: CatchUpView | None
    retention_days: int | None  # None keeps everything
    index_file_bytes: int
    index_memory_bytes: int


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    profile: str
    embedding_model: str
    reranker_model: str | None  # None when the profile does not rerank
    reranker_backend: str | None  # "onnx float32", "torch bfloat16", ...; None until the reranker loads
    store_backend: str  # "sqlite" or "postgresql"
    device: str
    dtype: str
    rss_bytes: int
    database_bytes: int  # the SQLite file and its WAL; 0 for PostgreSQL
    ingest_backlog: int  # messages waiting to be stored or embedded


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    guild_id: int
    channel_id: int | None = None
    author_id: int | None = None
    after: datetime | None = None
    before: datetime | None = None
    limit: int = 10
    rerank: bool = True


@dataclass(frozen=True, slots=True)
class SearchExplanation:
    """A search as asked, and the recall's own record of it: the hits (each with its first-stage rank, score and
    what the score is made of), each stage's time and what the reranker did."""

    request: SearchRequest
    recall: Recall


@dataclass(frozen=True, slots=True)
class StoredMessageView:
    message_id: int
    author_name: str | None
    content: str
    created_at: datetime
    edited_at: datetime | None
    author_id: int | None = None


@dataclass(frozen=True, slots=True)
class MemberView:
    """One name a member wrote under in the guild: the id, the name (a member typed it: escape), how many of their
    stored messages carry it and the newest one's time (seconds since the epoch)."""

    author_id: int
    name: str
    messages: int
    last_at: float


@dataclass(frozen=True, slots=True)
class ForgetPreview:
    """What a forget would take, for its confirmation: how many messages, and the newest of them (its author, its
    channel and its text) where there is one; None where it is not told (a whole guild's newest message)."""

    count: int
    author_id: int | None = None
    author_name: str | None = None
    channel_id: int | None = None
    channel_name: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class BrowsePage:
    """A channel's stored messages, newest first; ``next_before`` and ``next_before_id`` (the last message's time
    and id) page on (None: the oldest was reached)."""

    guild_id: int
    channel_id: int
    messages: tuple[StoredMessageView, ...]
    next_before: datetime | None
    next_before_id: int | None = None


@dataclass(frozen=True, slots=True)
class ForgetResult:
    kind: ForgetKind
    guild_id: int
    target_id: int
    count: int
    erased_from_disk: bool  # False: the erasure is retried in the background (the WAL was busy)


@dataclass(frozen=True, slots=True)
class SettingsView:
    auto_recall: bool
    recall_channel_ids: frozenset[int]
    capture_disabled_channel_ids: frozenset[int]
    retention_days: int | None
    forget_on_leave: bool
    store_bot_messages: bool  # other bots' and webhooks' messages (this bot's own are always kept)


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """What the dashboard may change; None leaves a setting as it is. ``retention_days`` 0 keeps everything."""

    auto_recall: bool | None = None
    retention_days: int | None = None
    forget_on_leave: bool | None = None
    store_bot_messages: bool | None = None


@dataclass(frozen=True, slots=True)
class ProfileView:
    name: str
    description: str
    current: bool


@dataclass(frozen=True, slots=True)
class ProfileSwitchResult:
    old: str
    new: str
    switched: bool
    error: str | None


class DashboardSource(Protocol):
    """Everything the dashboard reads from or does to memory. Raises ``SourceUnavailable`` while memory is closed."""

    async def guild_overviews(self) -> Sequence[GuildOverview]: ...

    async def process_info(self) -> ProcessInfo: ...

    async def ingest_totals(self) -> tuple[int, int]:
        """(messages stored in all guilds, ingest backlog): sampled to plot the ingest rate."""
        ...

    async def channel_ids(self, guild_id: int) -> Sequence[int]:
        """Channels (and threads) of the guild that memory holds messages of."""
        ...

    async def channel_names(self, guild_id: int) -> Mapping[int, str]:
        """The names memory has seen of the guild's channels (and threads), by id; members chose them (escape)."""
        ...

    async def search(self, request: SearchRequest) -> SearchExplanation: ...

    async def browse(self, guild_id: int, channel_id: int, before: datetime | None, limit: int,
                     before_id: int | None = None) -> BrowsePage:
        """Messages created before ``before``, or at it with an id below ``before_id``, newest first."""
        ...

    async def member_names(self, guild_id: int) -> Sequence[MemberView]:
        """Each name each author of the guild's stored messages wrote under (a row per author and name)."""
        ...

    async def forget_preview(self, kind: ForgetKind, guild_id: int, target_id: int) -> ForgetPreview:
        """What ``forget`` would take now: the count, and the newest such message's author, channel and text."""
        ...

    async def forget(self, kind: ForgetKind, guild_id: int, target_id: int) -> ForgetResult:
        """Forget, then erase from disk as the slash commands do; ``target_id`` is the guild's own id for "guild".
        Raises ``ActionNotDone`` when nothing could be forgotten."""
        ...

    async def settings(self, guild_id: int) -> SettingsView: ...

    async def performance_minutes(self, origin: str, since: float) -> Sequence[tuple[float, str]]:
        """The Performance figures ``origin`` kept by the minute from ``since`` on: (minute, figures JSON)."""
        ...

    async def keep_performance_minutes(self, origin: str, minutes: Sequence[tuple[float, str]], keep: int) -> None:
        """Keep ``minutes`` (a minute kept again replaces its figures), and only ``origin``'s newest ``keep``."""
        ...

    async def change_settings(self, guild_id: int, change: SettingsChange) -> SettingsView: ...

    async def profiles(self) -> Sequence[ProfileView]: ...

    async def switch_profile(self, name: str) -> ProfileSwitchResult: ...
