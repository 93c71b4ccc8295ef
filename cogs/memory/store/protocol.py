"""What each part of memory needs of a store, one role Protocol per user, and ``Store``, every role at once.

The ingest writer sees ``MessageWrites``, the vector filler ``PendingVectors``, the ingest queue ``IngestStore``,
re-embedding ``Reembedding``, admission ``GuildRulesSource``, guild policy ``GuildPolicyStore``, place names
``PlaceNameStore``, the erasure ledger ``ErasureRecords``, the dashboard ``MessageAuthors`` and
``PerformanceHistory``; Memory holds the ``Store`` and hands each its role.
``SqliteStore`` (sqlite/store.py) and ``PostgresStore`` (postgres/store.py) satisfy every role with the same
signatures (tests/cogs/memory/store/test_protocol.py). ``VectorIndexes`` is the vector side beside a store (FAISS
files per guild, or pgvector's index in the database), ``SearchEngine`` a store's first stage, and ``StoreBackend``
what each store package hands Memory: its store, and how to build its indexes, search engine and history ledger.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from ..vectors.stored import VectorSource
from .member_rows import MemberChannel, MemberMessage, Quotation
from .rows import (AuthorSeen, CandidateRow, ChannelMessage, PerformanceMinute, PlaceName, RowRef, VectorInput,
                   WriteBatch)

if TYPE_CHECKING:
    from datetime import datetime

    from ..records import Hit, SearchFilters
    from ..runtime.profile import MemoryProfile
    from ..runtime.ranking import RankingTuning
    from ..search.context import Window
    from ..search.first_stage import Mode, Searched
    from ..search.structure import ChannelStructure
    from ..vectors.embedding import Embedder
    from ..vectors.index import IndexUsage
    from .history import HistoryLedger

__all__ = ("DatabaseUnavailableError", "ErasureRecords", "GuildPolicyStore", "GuildRulesSource", "IngestStore",
           "MemberRecords", "MessageAuthors", "MessageReads", "MessageRefs", "MessageWrites", "PendingVectors",
           "PerformanceHistory", "PlaceNameStore", "Reembedding",
           "SearchEngine", "Store", "StoreBackend", "StoreOpenError", "StoreUpkeep", "VectorIndexes")


class StoreOpenError(RuntimeError):
    """The memory database cannot be opened; the message says what is wrong and what to do about it."""


class DatabaseUnavailableError(RuntimeError):
    """The store's database cannot be reached now (a server stopped or restarting, a dropped connection, a refused
    login); the message says what failed and what to do. Ingest keeps what it was given and tries again."""


class MessageWrites(Protocol):
    """What the ingest writer needs (ingest/writer.py): row ids for new messages, which of a batch's ids are stored or
    deleted already, and one transaction per ingest step.

    Row ids (``rowid``) are the store's own ids of stored messages: never reused, so a vector index id always means
    one message.
    """

    def allocate_rowids(self, count: int) -> range: ...
    async def reload_next_rowid(self) -> None: ...
    async def known_message_ids(self, message_ids: Sequence[int]) -> tuple[set[int], set[int]]: ...
    async def channel_guilds(self, channel_ids: Sequence[int]) -> dict[int, set[int]]: ...  # who holds each
    async def write(self, batch: WriteBatch) -> None: ...


class PendingVectors(Protocol):
    """Messages stored without their vector yet (``WriteBatch.pending``): what the vector filler reads, and the
    write that gives them their vectors (ingest/filler.py)."""

    async def pending_guilds(self) -> list[int]: ...
    async def pending_page(self, guild_id: int, after_rowid: int, limit: int) -> list[VectorInput]: ...
    async def pending_listed(self, guild_id: int, rowids: Sequence[int]) -> dict[int, VectorSource]: ...
    async def pending_count(self) -> tuple[int, int]: ...
    async def write(self, batch: WriteBatch) -> None: ...


class MessageRefs(Protocol):
    """The stored rows an edit, a delete or a forget selects: one message, or the refs of a list of messages, a
    channel (with its threads), a guild, an author or an age (ingest/queue.py, privacy/ledger.py)."""

    async def message(self, message_id: int) -> ChannelMessage | None: ...
    async def refs_for_message_ids(self, message_ids: Sequence[int]) -> list[RowRef]: ...
    async def refs_for_channel(self, guild_id: int, channel_id: int) -> list[RowRef]: ...
    async def refs_for_guild(self, guild_id: int) -> list[RowRef]: ...
    async def refs_for_author(self, guild_id: int | None, author_id: int) -> list[RowRef]: ...
    async def refs_older_than(self, guild_id: int, cutoff: float) -> list[RowRef]: ...


class IngestStore(MessageWrites, PendingVectors, MessageRefs, Protocol):
    """Everything ingest does to a store (ingest/queue.py hands the writer and the filler their parts), and the
    pruning of old delete tombstones."""

    async def prune_tombstones(self, before: float) -> int: ...


class MessageReads(Protocol):
    """Stored messages read back for the overview, the CLI and the dashboard: which guilds and channels hold some, a
    guild's count, one message, a channel in order and its newest message, which of some ids are stored or deleted."""

    async def guild_ids(self) -> list[int]: ...
    async def channel_ids(self, guild_id: int) -> list[int]: ...
    async def count_messages(self, guild_id: int) -> int: ...
    async def message(self, message_id: int) -> ChannelMessage | None: ...
    async def previous_in_channel(self, guild_id: int, channel_id: int, created_at: float,
                                  message_id: int) -> ChannelMessage | None: ...
    def iter_channel(self, guild_id: int, channel_id: int, page: int = 512) -> AsyncIterator[ChannelMessage]: ...
    async def known_message_ids(self, message_ids: Sequence[int]) -> tuple[set[int], set[int]]: ...


class Reembedding(Protocol):
    """What embedding every stored message again with a new model reads and writes (ingest/reembed.py)."""

    async def guild_ids(self) -> list[int]: ...
    async def channel_ids(self, guild_id: int) -> list[int]: ...
    def iter_channel(self, guild_id: int, channel_id: int, page: int = 512) -> AsyncIterator[ChannelMessage]: ...
    async def has_vector(self, rowid: int, model: str) -> bool: ...
    async def write(self, batch: WriteBatch) -> None: ...


class GuildRulesSource(Protocol):
    """The rules every way in obeys, as stored (privacy/admission.py): guild settings (JSON) and opt-outs."""

    async def guild_settings(self, guild_id: int) -> dict[str, Any]: ...
    async def opt_outs(self) -> set[tuple[int, int]]: ...


class GuildPolicyStore(GuildRulesSource, Protocol):
    """Guild policy's storage (guild_policy.py): the rules changed one setting or one member at a time, and the
    guilds a retention sweep visits."""

    async def set_guild_setting(self, guild_id: int, key: str, value: Any) -> None: ...
    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None: ...
    async def guild_ids(self) -> list[int]: ...


class PlaceNameStore(Protocol):
    """Guilds' and channels' names as last seen (ingest/names.py keeps them; forgetting a place forgets them)."""

    async def place_names(self) -> list[PlaceName]: ...
    async def write_place_names(self, names: Sequence[PlaceName]) -> None: ...
    async def forget_place_names(self, guild_id: int, channel_id: int | None = None) -> int: ...


class ErasureRecords(Protocol):
    """The erasure ledger's entries applied to this database (privacy/ledger.py), so a restore can be caught up."""

    async def erasures(self) -> dict[str, str]: ...
    async def record_erasure(self, erasure_id: str, at: float, entry: str) -> None: ...


class MemberRecords(Protocol):
    """What memory holds of one member (privacy/subject_access.py, member_export.py, quotations.py): their channels,
    their messages a page at a time, where their messages were quoted, and their last export's time."""

    async def member_channels(self, guild_id: int, author_id: int) -> list[MemberChannel]: ...
    def iter_member_messages(self, guild_id: int, author_id: int, *, newest_first: bool = False,
                             page: int = 512) -> AsyncIterator[MemberMessage]: ...
    async def record_quotations(self, quotations: Sequence[Quotation]) -> int: ...
    async def member_quotations(self, guild_id: int, author_id: int,
                                limit: int | None = None) -> list[Quotation]: ...
    async def quotation_counts(self, guild_id: int) -> dict[str, int]: ...
    async def prune_quotations(self, guild_id: int, before: float) -> int: ...
    async def last_export(self, guild_id: int, user_id: int) -> float | None: ...
    async def note_export(self, guild_id: int, user_id: int, at: float | None = None) -> None: ...
    async def erasures(self) -> dict[str, str]: ...  # an opt-out's time is its ledger entry's


class StoreUpkeep(Protocol):
    """What Memory does to the store as a whole: where it lives, erasing forgotten text from its files, marking
    which messages wait for the current model's vectors (at open, and after a switch re-embedded them), closing."""

    def local_file(self) -> Path | None: ...  # the database file (SQLite); None when it lives on a server
    async def purge_pending(self) -> bool: ...
    async def erase_forgotten(self) -> bool: ...
    async def mark_unembedded(self, model: str) -> int: ...
    async def resolve_embedded(self, model: str) -> None: ...
    async def close(self) -> None: ...


class MessageAuthors(Protocol):
    """Who wrote what: every name a member wrote under, for an admin who names them instead of giving an id (the
    terminal's and the dashboard's ``@name``, cogs/memory/names.py), and who wrote each of some messages."""

    # One row per (author, name): by author, newest first, then by name in code-point order (rows.authors_of folds
    # them into one an author).
    async def author_names(self, guild_id: int) -> list[AuthorSeen]: ...
    async def message_authors(self, message_ids: Sequence[int]) -> dict[int, tuple[int, str]]: ...  # id, name


class PerformanceHistory(Protocol):
    """The dashboards' Performance figures by the minute, so that a restart keeps them; a few rows per origin."""

    async def performance_minutes(self, origin: str, since: float) -> list[PerformanceMinute]: ...
    async def keep_performance_minutes(self, minutes: Sequence[PerformanceMinute], keep: int) -> None: ...


@runtime_checkable
class Store(IngestStore, MessageReads, Reembedding, GuildPolicyStore, PlaceNameStore, ErasureRecords, StoreUpkeep,
            MessageAuthors, PerformanceHistory, MemberRecords, Protocol):
    """Every role at once: messages with their keyword text and vectors, guild settings, opt-outs, delete tombstones,
    names and applied erasures. Only Memory (the facade that hands each part its role) holds a whole ``Store``."""


@runtime_checkable
class VectorIndexes(Protocol):
    """The vector side ingest and Memory keep in step with a store's writes, and the nearest vectors a search asks
    for (FAISS files per guild beside SQLite, vectors/index.IndexRegistry; beside PostgreSQL the database's own
    pgvector index, which follows every write by itself: postgres/indexes.DatabaseIndexes)."""

    model: str
    dimension: int

    @property
    def directory(self) -> Path | None: ...
    async def load_all(self) -> None: ...
    # A guild's index in memory before a write changes the store under it (a no-op unless indexes load on demand).
    async def loaded(self, guild_id: int) -> None: ...
    async def add(self, guild_id: int, ids: np.ndarray, vectors: np.ndarray) -> None: ...
    async def remove(self, guild_id: int, ids: np.ndarray) -> int: ...
    async def drop(self, guild_id: int) -> None: ...
    async def save_dirty(self) -> None: ...
    async def remove_stale_files(self) -> None: ...
    async def close(self) -> None: ...
    async def usage(self, guild_id: int) -> IndexUsage: ...
    # Top-k (scores, row ids) per query row, best first, among ``allowed_ids`` if given; missing: id -1, score -inf.
    async def search(self, guild_id: int, queries: np.ndarray, k: int,
                     allowed_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]: ...


@runtime_checkable
class SearchEngine(Protocol):
    """A store's first stage (search/first_stage.FirstStage over its own look-ups)."""

    tuning: RankingTuning

    async def search(self, query: str, filters: SearchFilters, limit: int,
                     mode: Mode = "hybrid", asked_at: datetime | None = None) -> list[Hit]: ...
    # ``search``'s hits with the context it read for them, which the reranker's pool lends from (search/pool.py).
    async def searched(self, query: str, filters: SearchFilters, limit: int,
                       mode: Mode = "hybrid", asked_at: datetime | None = None) -> Searched: ...
    # The channel window (search/context.py) of each of ``message_ids`` in the filters' guild, by row id, and the
    # rows that pass ``filters`` of those messages, their windows and the messages they reply to (search/pool.py).
    async def context(self, message_ids: Sequence[int],
                      filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]: ...
    async def channel_structure(self, guild_id: int, channel_id: int) -> ChannelStructure: ...


@runtime_checkable
class StoreBackend(Protocol):
    """What a store package gives Memory: the open store, and the parts built on it. Indexes and search engine are
    built again when a profile switch brings another embedding model."""

    @property
    def store(self) -> Store: ...
    def indexes(self, index_dir: Path, model: str, dimension: int) -> VectorIndexes: ...
    def search_engine(self, embedder: Embedder, indexes: VectorIndexes, profile: MemoryProfile) -> SearchEngine: ...
    def history(self, write_lock: asyncio.Lock) -> HistoryLedger: ...
