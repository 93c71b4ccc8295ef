"""Records shared by every part of the memory cog: one stored message, one search's filters, one search result,
what one recall did, and how much one search may ask for."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .vectors.index import IndexUsage

__all__ = ("Boost", "ChannelActivity", "Hit", "MemoryStats", "MessageRecord", "PooledBy", "Recall", "RerankFigures", "ScoreParts",
           "SearchFilters", "MAX_RESULTS", "MAX_QUERY_CHARS", "checked_limit")

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


@dataclass(frozen=True, slots=True)
class Boost:
    """A bounded boost a candidate got for answering what the question names (search/named.py): why, and how much."""

    reason: str  # "author @alice named in the question", "in #general, named in the question", ...
    amount: float


@dataclass(frozen=True, slots=True)
class ScoreParts:
    """What a candidate's first-stage score is made of (search/first_stage.py records it beside the arithmetic).

    ``total`` is the score, up to float rounding: each side's standardised score times its weight, plus ``missing``
    (what a side that did not return it counts: its lowest standardised score, times its weight; a message no side
    returned starts there), plus what it received from the messages around it. Except in the ``tail``: the vector
    side's nearest messages when the model reads too little of the query, kept out of the fusion, whose score only
    orders them after everything ranked.
    """

    keyword: float | None  # the keyword side's standardised score; None: that side did not return it
    vector: float | None  # the vector side's standardised score; None: that side did not return it
    vector_weight: float  # the vector side's weight, scaled by the share of the query the model reads; 0: no part
    keyword_weight: float  # the keyword side's weight: 1 - the vector weight the fusion used; 0: no part
    missing: float = 0.0
    neighbour_loan: float = 0.0  # from its next or previous message (context_weight, next_context_weight)
    question_loan: float = 0.0  # from a question it may answer (questions.answers), and what that one got
    reply_loan: float = 0.0  # from a question it replies to on Discord
    tail: bool = False
    boosts: tuple[Boost, ...] = ()  # for the people, channels and times the question names (search/named.py)
    informativeness: float = 1.0  # share of a loan it may borrow, and of its score above the floor it keeps
    said_little: float = 0.0  # what it lost for saying little of its own (search/informative.py): 0 or less

    @property
    def total(self) -> float:
        sides = sum(weight * score for weight, score in ((self.vector_weight, self.vector),
                                                          (self.keyword_weight, self.keyword)) if score is not None)
        named = sum(boost.amount for boost in self.boosts)
        return (sides + self.missing + self.neighbour_loan + self.question_loan + self.reply_loan + named
                + self.said_little)


@dataclass(frozen=True, slots=True)
class PooledBy:
    """Why a message entered the reranker's pool as context (search/pool.py): the hit that lent it its place
    (``lender``, a message id) and how it relates to that hit: "reply" (a Discord reply to it), "replied" (the
    message it replies to), "burst" (its author's adjacent message), "answer" (a guessed answer to its question),
    "question" (the question before it, by another author)."""

    lender: int
    kind: str

    @property
    def relation(self) -> str:
        """How it relates to its lender, in words that go before "message <lender id>" ("a Discord reply to")."""
        return _POOLED_AS.get(self.kind, self.kind)


_POOLED_AS = {"reply": "a Discord reply to", "replied": "the message replied to by",
              "burst": "its author's line beside", "answer": "a guessed answer to", "question": "the question before"}


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result, best first by ``rank``; recall's copy carries ``rerank_score`` (search/second_stage.py)."""

    message_id: int
    guild_id: int
    channel_id: int
    author_id: int
    author_name: str
    content: str
    created_at: datetime  # timezone-aware UTC
    score: float  # first-stage: the fused vector and keyword score
    sources: tuple[str, ...]  # "vector", "keyword", or ("context",) for a neighbour of a strong hit
    rank: int  # in the first stage, from 1
    parts: ScoreParts | None = None  # what ``score`` is made of, as the first stage worked it out
    rerank_score: float | None = None  # None when nothing reranked it
    pooled_by: PooledBy | None = None  # set when it entered the reranker's pool as a hit's context


@dataclass(frozen=True, slots=True)
class RerankFigures:
    """What the reranker did for one recall, measured in that call: how long the recall waited for its scores, the
    texts it took (the profile's candidate count at most), how many it scored (those from its cache included), how
    many came from its cache, and what scored them ("onnx float32", "http"; None when nothing did)."""

    ms: float
    offered: int
    scored: int
    cached: int
    by: str | None


@dataclass(frozen=True, slots=True)
class Recall:
    """What one ``Memory.recall`` did: its hits, best first, and what they took. ``candidates``: how many hits the
    first stage gave the recall before its limit cut them (the reranker's pick of them, when it reranks).
    ``rerank`` is None when no reranker took the texts (none configured, reranking off, its model still loading,
    its queue full)."""

    hits: tuple[Hit, ...]
    candidates: int
    first_stage_ms: float
    total_ms: float
    rerank: RerankFigures | None = None

    @property
    def reranked(self) -> bool:
        """Whether the reranker scored any of the hits (else they are in first-stage order)."""
        return any(hit.rerank_score is not None for hit in self.hits)


def checked_limit(limit: int) -> int:
    """``limit`` itself if it is a whole number of at least 1; a ValueError otherwise, since slicing results by zero
    or a negative number would silently drop some."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number of at least 1, not {limit!r}")
    return limit


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """One guild's memory as /memory stats shows it: its messages, its vector index, and what waits for ingest."""

    messages: int
    index: IndexUsage
    embedding_model: str
    queued: int


@dataclass(frozen=True, slots=True)
class ChannelActivity:
    """One channel (or thread) as memory holds it: how many of its messages, and when the newest was written."""

    channel_id: int
    messages: int
    last_message_at: datetime | None
