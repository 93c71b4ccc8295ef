"""SqliteSearchEngine: the first stage over the SQLite store — FAISS vectors and FTS5 BM25 under the same filters.

The fusion, the spread to neighbours and the ranking are search/'s (fusion.py, loans.py, first_stage.py); this module
holds the FTS5 SQL and the look-ups, each step's queries run in one hop on the store's reader threads.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...language import keywords as text
from ...records import SearchFilters
from ...search.context import Window, rows_wanted, window_of
from ...search.first_stage import FirstStage, RecentMessage, narrows
from ...search.fusion import Hits
from ...search.terms import bm25_idf, characters_alone, within_budget
from ...runtime.ranking import RankingTuning
from ...vectors.embedding import Embedder
from ..neighbours import select_neighbour_ids
from ..protocol import VectorIndexes
from ..rows import AuthorSeen, CandidateRow, authors_of, candidate_row
from .dashboard_rows import SELECT_AUTHOR_NAMES
from .filters import filter_clause
from .postings import PostingCounts
from .store import SqliteStore

if TYPE_CHECKING:
    from ...runtime.profile import MemoryProfile

__all__ = ("SqliteSearchEngine",)

log = logging.getLogger(__name__)

# Documents a keyword literal matches, counted only up to a cap: the count stops reading the term's postings
# there, so a very common word costs no more than a rare one.
COUNT_MATCHES = "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)"
# {by_author} adds each name match (AUTHOR_MATCH); the rows only a name matches tie, and the latest come first.
SELECT_KEYWORD = """
SELECT messages_fts.rowid, bm25(messages_fts, ?, 0.0) - ({by_author}) AS rank
FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid
WHERE messages_fts MATCH ? AND {where}
ORDER BY rank, m.created_at DESC, m.id DESC LIMIT ?
"""
AUTHOR_MATCH = "? * (messages_fts.rowid IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?))"
# FTS5's "averages" record (row 1 of its data table): a varint count of the rows indexed, then each column's token
# total. bm25() reads its row count there; reading it here costs one row, where count(*) would read every one.
SELECT_FTS_AVERAGES = "SELECT block FROM messages_fts_data WHERE id = 1"
# Row lookups are driven by the id list (CROSS JOIN fixes the join order): left to itself, the planner reads the
# whole guild through its guild_id index and tests each row against the list (21 ms instead of 0.2 ms at 100k).
SELECT_PASSING = """
SELECT m.id FROM json_each(?) AS wanted CROSS JOIN messages AS m ON m.id = wanted.value WHERE {where}
"""
NEIGHBOURS_FROM = "FROM json_each(?) AS wanted CROSS JOIN messages AS c ON c.id = wanted.value"
# The row ids of one guild's messages named by their Discord ids, and the Discord id each replies to.
SELECT_ROWIDS = """
SELECT m.id, m.reply_to_id FROM json_each(?) AS wanted CROSS JOIN messages AS m ON m.message_id = wanted.value
WHERE m.guild_id = ?
"""
SELECT_CANDIDATES = """
SELECT m.id, m.message_id, m.guild_id, m.channel_id, m.parent_channel_id, m.author_id, m.author_name, m.content,
       m.created_at, m.reply_to_id
FROM json_each(?) AS wanted CROSS JOIN messages AS m ON m.id = wanted.value WHERE {where}
"""

# A channel's last messages, newest first (the messages_channel_order index reads them in order).
SELECT_RECENT_IN_CHANNEL = """
SELECT message_id, author_id, reply_to_id, content FROM messages
WHERE guild_id = ? AND channel_id = ? ORDER BY created_at DESC, message_id DESC LIMIT ?
"""

# The guild's channel names as last seen (its members' come from author_names' query, folded by rows.authors_of).
SELECT_GUILD_CHANNELS = "SELECT id, name FROM place_names WHERE guild_id = ? AND kind = 'channel'"


def select_neighbours(reply_window: int) -> str:
    """The neighbours of the row ids in a JSON array."""
    return select_neighbour_ids(reply_window) + NEIGHBOURS_FROM


class SqliteSearchEngine(FirstStage):
    """Hybrid first-stage search over one SqliteStore and its per-guild vector indexes.

    SQLite runs on the store's reader threads (each step's queries in one hop), FAISS on the index registry's
    thread and the query embedding on the model's thread; the event loop only awaits them.
    """

    def __init__(self, store: SqliteStore, embedder: Embedder, indexes: VectorIndexes,
                 profile: MemoryProfile) -> None:
        super().__init__(embedder, profile)
        self._store = store
        self._indexes = indexes
        self._postings = PostingCounts()

    async def _context_and_rows(self, sources: list[int], candidates: list[int],
                                filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]:
        return await self._store.read(read_context_and_rows, sources, candidates, filters, self.tuning.reply_window)

    async def context(self, message_ids: Sequence[int],
                      filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]:
        return await self._store.read(read_context_of, list(message_ids), filters, self.tuning.reply_window)

    async def _recent_in_channel(self, guild_id: int, channel_id: int, limit: int) -> list[RecentMessage]:
        return await self._store.read(read_recent_in_channel, guild_id, channel_id, limit)

    async def _guild_names(self, guild_id: int) -> tuple[dict[int, str], dict[int, str]]:
        return await self._store.read(read_guild_names, guild_id)

    async def _people(self, guild_id: int, names: list[str]) -> set[str]:
        return await self._store.read(read_people, names, self.tuning, self._postings)

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        vectors = await self._embed_query(query)
        if not (narrows(filters) or filters.exclude_message_ids):
            return await self._index_search(filters.guild_id, vectors, k, None)
        # Most filtered searches (a permission set, a time range) leave most of a guild: over-fetch and drop.
        overfetch = self.tuning.vector_overfetch
        hits = await self._index_search(filters.guild_id, vectors, k * overfetch, None)
        passing = await self._store.read(read_passing_ids, [rowid for rowid, _ in hits], filters)
        kept = [(rowid, score) for rowid, score in hits if rowid in passing]
        if len(kept) >= k or len(hits) < k * overfetch:
            return kept[:k]
        allowed = await self._store.rowids_matching(filters)
        return await self._index_search(filters.guild_id, vectors, k, allowed)

    async def _index_search(self, guild_id: int, vectors: np.ndarray, k: int, allowed: np.ndarray | None) -> Hits:
        scores, ids = await self._indexes.search(guild_id, vectors, k, allowed)
        return [(int(rowid), float(score)) for rowid, score in zip(ids[0], scores[0]) if rowid >= 0]

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int, addressee: str = "") -> Hits:
        terms = text.keyword_terms(query)[:self.tuning.keyword_max_terms]
        if not terms:
            return []
        return await self._store.read(read_keyword_hits, terms, filters, k, self.tuning, self._postings,
                                      frozenset(text.keyword_terms(addressee)))


# -- on a reader thread: each function is one hop's queries ----------------------------------------------------


def read_keyword_hits(connection: sqlite3.Connection, terms: list[str], filters: SearchFilters, k: int,
                      tuning: RankingTuning, counts: PostingCounts | None = None,
                      addressed: frozenset[str] = frozenset()) -> Hits:
    query = _keyword_query(connection, terms, tuning, PostingCounts(keep_s=0.0) if counts is None else counts,
                           addressed)
    if query is None:
        return []
    expression, names = query
    where, params = filter_clause(filters)
    by_author = " + ".join([AUTHOR_MATCH] * len(names)) or "0.0"
    statement = SELECT_KEYWORD.format(by_author=by_author, where=where)
    named = [value for name, score in names for value in (score, name)]
    rows = connection.execute(statement, [tuning.body_weight, *named, expression, *params, k]).fetchall()
    # bm25() is lower-is-better; flip it so every score here is higher-is-better.
    return [(rowid, -rank) for rowid, rank in rows]


def _documents(connection: sqlite3.Connection, term: text.Term, tuning: RankingTuning, counts: PostingCounts) -> int:
    """The rows ``term`` matches, counted to just above the posting budget (through ``counts``: kept a minute)."""
    match, cap = text.match_term(term), tuning.keyword_max_postings + 1
    return counts.count(match, cap, lambda: int(connection.execute(COUNT_MATCHES, [match, cap]).fetchone()[0]))


def read_guild_names(connection: sqlite3.Connection, guild_id: int) -> tuple[dict[int, str], dict[int, str]]:
    named = (AuthorSeen(*row) for row in connection.execute(SELECT_AUTHOR_NAMES, [guild_id]))
    members = {author.author_id: author.name for author in authors_of(named)}
    return members, dict(connection.execute(SELECT_GUILD_CHANNELS, [guild_id]).fetchall())


def read_people(connection: sqlite3.Connection, names: list[str], tuning: RankingTuning,
                counts: PostingCounts | None = None) -> set[str]:
    """Which of ``names`` the index holds at least as often as an author's name as anywhere (the keyword side's
    rule for a word that means a person); a name of several terms reads as a person when each of them does."""
    kept = PostingCounts(keep_s=0.0) if counts is None else counts

    def person(term: str) -> bool:
        return 2 * _documents(connection, text.Term(term, column="author"), tuning, kept) >= _documents(
            connection, text.Term(term), tuning, kept) > 0

    return {name for name in names if (terms := text.keyword_terms(name)) and all(map(person, terms))}


def _keyword_query(connection: sqlite3.Connection, terms: list[str], tuning: RankingTuning,
                   counts: PostingCounts, addressed: frozenset[str] = frozenset()
                   ) -> tuple[str, list[tuple[str, float]]] | None:
    """The MATCH string for ``terms`` (common terms only rank, author names match their authors' messages, the
    ``addressed`` terms of the name the question is put to match as any word, with no name's score), and for each
    other term some display name holds, the MATCH string of those names and the score a match adds; each term's
    count of messages read through ``counts`` (kept a minute)."""

    def documents(term: text.Term) -> int:
        return _documents(connection, term, tuning, counts)

    postings = {term: documents(text.Term(term)) for term in terms}
    postings.update((term, documents(text.Term(term))) for term in characters_alone(postings))
    terms = list(postings)
    within = within_budget(postings, tuning.keyword_max_postings)
    matching: list[text.Term] = []
    authored: dict[text.Term, int] = {}
    for term in within:
        if term in addressed:  # the name put to: their messages match, but lift by what they say alone
            matching.append(text.Term(term))
            continue
        name = text.Term(term, column="author")
        authored[name] = documents(name)
        # A word found at least as often in display names as in messages means a person: match their messages.
        as_author = 2 * authored[name] >= postings[term] > 0
        matching.append(name if as_author else text.Term(term))
    ranking = [text.Term(term) for term in terms if term not in within]
    expression = text.match_expression(matching, ranking_only=ranking)
    if expression is None:
        return None
    indexed = rows_indexed(connection) if any(authored.values()) else 0
    names = [(text.match_term(name), tuning.author_weight * bm25_idf(indexed, count))
             for name, count in authored.items() if count]
    return expression, names


def rows_indexed(connection: sqlite3.Connection) -> int:
    """How many rows messages_fts holds, read from FTS5's averages record (0 before the first row)."""
    row = connection.execute(SELECT_FTS_AVERAGES).fetchone()
    return 0 if row is None or not row[0] else _varint(row[0])


def _varint(data: bytes) -> int:
    """The SQLite varint (FTS5 writes the same) at the start of ``data``: big-endian, seven bits a byte while the
    high bit is set, and a ninth byte taken whole."""
    value = 0
    for position, byte in enumerate(data[:9]):
        if position == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def read_context_and_rows(connection: sqlite3.Connection, sources: list[int], candidates: list[int],
                          filters: SearchFilters, reply_window: int) -> tuple[Window, dict[int, CandidateRow]]:
    """The channel neighbours of ``sources``, and the rows of the candidates and those neighbours that pass."""
    window = window_of(connection.execute(select_neighbours(reply_window), [_json_ids(sources)]), reply_window)
    where, params = filter_clause(filters)
    wanted = _json_ids(rows_wanted(candidates, window))
    rows = connection.execute(SELECT_CANDIDATES.format(where=where), [wanted, *params])
    return window, {row[0]: candidate_row(row) for row in rows}


def read_context_of(connection: sqlite3.Connection, message_ids: list[int], filters: SearchFilters,
                    reply_window: int) -> tuple[Window, dict[int, CandidateRow]]:
    """The window of each of ``message_ids`` in ``filters``' guild, and the rows that pass ``filters`` of those
    messages, their windows and the messages they reply to."""
    named = connection.execute(SELECT_ROWIDS, [_json_ids(message_ids), filters.guild_id]).fetchall()
    targets = [reply_to for _, reply_to in named if reply_to is not None]
    replied = connection.execute(SELECT_ROWIDS, [_json_ids(targets), filters.guild_id]).fetchall() if targets else []
    sources = [rowid for rowid, _ in named]
    return read_context_and_rows(connection, sources, sources + [rowid for rowid, _ in replied], filters,
                                 reply_window)


def read_recent_in_channel(connection: sqlite3.Connection, guild_id: int, channel_id: int,
                           limit: int) -> list[RecentMessage]:
    """A channel's last ``limit`` messages, oldest first."""
    rows = connection.execute(SELECT_RECENT_IN_CHANNEL, [guild_id, channel_id, limit]).fetchall()
    return [RecentMessage(*row) for row in reversed(rows)]


def read_passing_ids(connection: sqlite3.Connection, rowids: list[int], filters: SearchFilters) -> set[int]:
    if not rowids:
        return set()
    where, params = filter_clause(filters)
    return {row[0] for row in connection.execute(SELECT_PASSING.format(where=where), [_json_ids(rowids), *params])}


def _json_ids(ids: Sequence[int]) -> str:
    return json.dumps([int(i) for i in ids])
