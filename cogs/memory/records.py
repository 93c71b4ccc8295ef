"""Records shared by every part of the memory cog: one stored message, one search's filters, one search result,
and how much one search may ask for."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import NotRequired, TypedDict

__all__ = ("Candidate", "MessageRecord", "SearchFilters", "MAX_RESULTS", "MAX_QUERY_CHARS", "checked_limit")

# What a person's search may ask for, the same in /memory search and ``python -m cogs.memory search``.
MAX_RESULTS = 50
MAX_QUERY_CHARS = 300


@dataclass(frozen=True, slots=True)
class MessageRecord:
    """A Discord message as memory stores it; times are timezone-aware UTC."""

    message_id: int
    guild_id: int
    channel_id: int
    parent_channel_id: int | None
    author_id: int
    author_name: str
    content: str
    created_at: datetime
    edited_at: datetime | None = None
    reply_to_id: int | None = None
    author_is_bot: bool = False
    # Written by another bot or a webhook (not this bot): stored only where the guild's ``store_bot_messages`` is on.
    automated: bool = False
    # Short text stand-ins for attachments and embeds (file names, embed titles); appended to the indexed text.
    attachments: tuple[str, ...] = ()
    # Only for a thread's message: a private thread stays limited to its members even once it leaves the cache.
    private_thread: bool = False


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """What a search may return. ``guild_id`` always applies; ``None`` elsewhere means no restriction."""

    guild_id: int
    channel_ids: frozenset[int] | None = None
    author_ids: frozenset[int] | None = None
    after: datetime | None = None
    before: datetime | None = None
    # Channels (and thread ids) the caller may read; the cog fills this from permissions, the CLI leaves it None.
    allowed_channel_ids: frozenset[int] | None = None
    # Widens ``allowed_channel_ids``: public threads under these parents are readable too, cached or not, because
    # Discord drops archived threads from the cache while anyone who reads the parent may still read them.
    public_thread_parent_ids: frozenset[int] | None = None
    exclude_message_ids: frozenset[int] = field(default_factory=frozenset)


class Candidate(TypedDict):
    """One search result, best first by ``rank``. A dict because the reranker's public API takes and returns dicts."""

    message_id: int
    guild_id: int
    channel_id: int
    author_id: int
    author_name: str
    content: str
    created_at: str  # ISO-8601, UTC
    score: float  # first-stage: the fused vector and keyword score
    sources: list[str]  # "vector", "keyword", or ["context"] for a neighbour of a strong hit
    rank: int
    rerank_score: NotRequired[float | None]  # set by recall: None when nothing reranked it


def checked_limit(limit: int) -> int:
    """``limit`` itself if it is a whole number of at least 1; a ValueError otherwise, since slicing results by zero
    or a negative number would silently drop some."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number of at least 1, not {limit!r}")
    return limit
