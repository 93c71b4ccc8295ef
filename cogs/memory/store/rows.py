"""The store's rows: where a stored message sits, what ingest reads back, and one ingest step's writes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

import numpy as np

from ..records import MessageRecord
from ..vectors.stored import VectorSource

__all__ = ("AuthorSeen", "CandidateRow", "ChannelMessage", "EditRow", "NewRow", "PerformanceMinute",
           "PlaceName", "RowRef", "VectorInput", "WriteBatch", "authors_of", "candidate_row", "from_timestamp",
           "to_timestamp", "vector_input")


def to_timestamp(moment: datetime) -> float:
    if moment.tzinfo is None:
        raise ValueError("times must be timezone-aware (UTC)")
    return moment.timestamp()


def from_timestamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


class CandidateRow(NamedTuple):
    """A search candidate's message as both stores read it, its fields named as MessageRecord names them, its time
    as stored (seconds since the epoch). A tuple rather than a MessageRecord: a search reads some 300 rows (its
    candidates and their neighbours) to keep 10, and a frozen record with an aware datetime for each cost about
    1 ms a search (docs/scale.md); the 10 kept convert their time."""

    message_id: int
    guild_id: int
    channel_id: int
    parent_channel_id: int | None
    author_id: int
    author_name: str
    content: str
    created_at: float
    reply_to_id: int | None


def candidate_row(row: Sequence[Any]) -> CandidateRow:
    """A search candidate as both stores read it (row id first, then SELECT_CANDIDATES' columns in order)."""
    return CandidateRow._make(row[1:])


@dataclass(frozen=True, slots=True)
class RowRef:
    """Where a stored message sits: enough to remove it from FAISS and find its channel neighbours."""

    rowid: int
    message_id: int
    guild_id: int
    channel_id: int
    created_at: float


@dataclass(frozen=True, slots=True)
class ChannelMessage:
    """A stored message as the embedding input needs it."""

    rowid: int
    message_id: int
    guild_id: int
    channel_id: int
    author_name: str
    content: str
    created_at: float


@dataclass(frozen=True, slots=True)
class AuthorSeen:
    """One author of a guild's stored messages: id, name as last seen (their newest message's), how many, when; or,
    as a store's ``author_names`` lists them, one name an author wrote under, its messages and the newest's time."""

    author_id: int
    name: str
    messages: int
    last_at: float


def authors_of(names: Iterable[AuthorSeen]) -> list[AuthorSeen]:
    """Each author once, from a store's ``author_names`` rows (one per name they wrote under): all their messages,
    the newest's time and the name it carries (of names whose newest messages share one time, the first in
    code-point order, as ``author_names`` lists them on both stores); most messages first, then by id."""
    by_author: dict[int, list[AuthorSeen]] = {}
    for named in names:
        by_author.setdefault(named.author_id, []).append(named)
    newest = {author_id: min(rows, key=lambda row: (-row.last_at, row.name)) for author_id, rows in by_author.items()}
    authors = [AuthorSeen(author_id, newest[author_id].name, sum(row.messages for row in rows),
                          newest[author_id].last_at) for author_id, rows in by_author.items()]
    return sorted(authors, key=lambda author: (-author.messages, author.author_id))


async def channel_pages(fetch_page: Callable[[tuple[float, int], int], Awaitable[Sequence[Sequence[Any]]]],
                        page: int) -> AsyncIterator[ChannelMessage]:
    """Every message ``fetch_page(after, page)`` returns, page after page, keyed on (created_at, message_id)."""
    after: tuple[float, int] = (float("-inf"), -1)
    while True:
        rows = await fetch_page(after, page)
        for row in rows:
            yield ChannelMessage(*row)
        if len(rows) < page:
            return
        after = (rows[-1][6], rows[-1][1])


@dataclass(frozen=True, slots=True)
class VectorInput:
    """A stored message that needs a vector, and what its vector is computed from (it and its predecessor)."""

    rowid: int
    message_id: int
    guild_id: int
    source: VectorSource


@dataclass(frozen=True, slots=True)
class NewRow:
    rowid: int
    record: MessageRecord
    content: str
    fts_body: str
    # Ingest stores a message before its vector exists (``WriteBatch.pending``); tests may store both at once.
    vector: np.ndarray | None = None

    def values(self) -> tuple[Any, ...]:
        """The ``messages`` row, in the column order both stores insert it in (id, message_id, ... reply_to_id)."""
        record = self.record
        return (self.rowid, record.message_id, record.guild_id, record.channel_id, record.parent_channel_id,
                record.private_thread, record.author_id, record.author_name, record.author_is_bot, self.content,
                to_timestamp(record.created_at), to_timestamp(record.edited_at) if record.edited_at else None,
                record.reply_to_id)


@dataclass(frozen=True, slots=True)
class EditRow:
    """A stored message's new text: what ``messages`` and its FTS5 row get."""

    rowid: int
    content: str
    fts_body: str
    author_name: str
    edited_at: float | None


@dataclass(slots=True)
class WriteBatch:
    """Everything one ingest step changes, written in one transaction."""

    # The model of ``vectors``; a batch that writes no vector and bumps no generation needs none.
    model: str = ""
    inserts: list[NewRow] = field(default_factory=list)
    edits: list[EditRow] = field(default_factory=list)
    vectors: list[tuple[int, np.ndarray]] = field(default_factory=list)
    deletes: list[int] = field(default_factory=list)
    # (guild_id, cutoff): every message of that guild written before the cutoff goes, in one DELETE (retention).
    older_than: tuple[int, float] | None = None
    guild_ids: set[int] = field(default_factory=set)
    # The text behind ``vectors`` changed (an edit, a new predecessor): other models' vectors for those rows
    # are stale and are dropped; a later switch to such a model embeds them again.
    replace_all_models: bool = False
    # Deleted message ids to remember (ids only), stamped ``deleted_at``: a later add of one is not stored.
    tombstones: list[int] = field(default_factory=list)
    deleted_at: float = 0.0
    # Messages that need a vector (``pending_vectors``; pending_vectors.py): marked, found again after a restart,
    # and cleared when their vector is written. ``successors_of``: new rows whose stored successor in the channel
    # gets a new predecessor, so needs a vector again. ``rejected``: (rowid, why) the model could not embed.
    pending: list[int] = field(default_factory=list)
    successors_of: list[int] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)
    rejected: list[tuple[int, str]] = field(default_factory=list)
    # Rows whose vectors (every model's) no longer describe them and go now; they are in ``pending`` too.
    dropped_vectors: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class PlaceName:
    """A guild's or a channel's name as memory last saw it (a thread is a channel with a parent). A guild's own row
    has ``place_id == guild_id``; its kind keeps it apart from an old guild's first channel, which shares its id."""

    guild_id: int
    kind: Literal["guild", "channel"]
    place_id: int
    name: str
    parent_id: int | None = None
    seen_at: float = 0.0

    @property
    def key(self) -> tuple[int, str, int]:
        return self.guild_id, self.kind, self.place_id


def vector_input(row: Sequence[Any]) -> VectorInput:
    """(rowid, message_id, guild_id, author, content, previous author, previous content) as a VectorInput."""
    rowid, message_id, guild_id, author_name, content, previous_author, previous_content = row
    previous = (previous_author, previous_content) if previous_author is not None else None
    return VectorInput(rowid, message_id, guild_id, VectorSource(author_name, content, previous))


@dataclass(frozen=True, slots=True)
class PerformanceMinute:
    """One minute of a dashboard's Performance figures, kept so that a restart does not lose them. ``origin`` names
    the process ("bot", "standalone"); ``figures`` is that minute as metrics.py writes it (JSON, no message text)."""

    origin: str
    minute: float  # unix time of the minute's start
    figures: str
