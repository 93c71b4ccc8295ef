"""SearchEngine: first-stage retrieval — FAISS vectors and FTS5 BM25, fused, widened to neighbours, filtered."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..language import questions
from ..language import keywords as text
from ..language.coverage import covered_share, model_scripts
from ..vectors.embedding import Embedder
from ..store.sqlite.filters import filter_clause
from ..records import Candidate, SearchFilters, checked_limit
from ..store.rows import from_timestamp
from ..store.sqlite.store import MemoryStore
from ..vectors.index import IndexRegistry

if TYPE_CHECKING:
    from ..runtime.profile import MemoryProfile

__all__ = ("FirstStage", "Fused", "Mode", "SearchEngine", "fuse", "fuse_sides", "neighbours_in", "spread_to_neighbours")

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "vector", "keyword"]
Hits = list[tuple[int, float]]
# Each source row id's previous and next messages in its channel, as the store reads them: the previous row id, the
# row ids after it, nearest first (REPLY_WINDOW + 1 at most), and the row ids of the messages that reply to it
# through Discord's reply, earliest first (REPLY_WINDOW at most).
Window = dict[int, tuple[int | None, tuple[int, ...], tuple[int, ...]]]
# Each source row id's previous and next row id in its channel, then the row ids of what may answer the source, and
# what may answer its next message, were they questions (questions.answers; for the source, its replies too).
Neighbours = dict[int, tuple[int | None, int | None, tuple[int, ...], tuple[int, ...]]]
# A SELECT_CANDIDATES row after its row id: message_id, guild_id, channel_id, author_id, author_name, content,
# created_at.
Row = tuple[Any, ...]
# Where a candidate row (SELECT_CANDIDATES without its row id) holds the message's author and text.
ROW_AUTHOR = 3
ROW_CONTENT = 5

# Share of the fused score that comes from the vector side. Both sides are standardised per query first
# (z-scores), so this weighs evidence, not score scales. Chat questions name people and things the keyword
# side matches exactly; MiniLM adds paraphrases. Swept 0.3–0.5 on LoCoMo: flat from 0.3 to 0.4 with vectors made
# after the previous message; with both forms (vectors.py), 0.4 beat 0.25 and 0.35 on LoCoMo and on the chat
# fixture, and 0.45 and 0.5 lost on LoCoMo (README, "The vector side"). A query partly written in scripts the
# embedding model does not read gets that much less (coverage.covered_share), and none at the top when the model
# reads no more than half its words: an English model reads the names in a Chinese question, which the keyword side
# matches exactly, but not what is asked about them (its hits then only fill the list after the keyword side's).
VECTOR_WEIGHT = 0.4
MIN_COVERED_SHARE = 0.5
# A message is read in the context of the one before and after it: a strong hit lends a share of its (positive)
# score to its channel neighbours, more to the next message than to the previous one. A reply follows what it
# answers, and a stored vector already reads its predecessor (half of it is the message after the previous one,
# vectors.py), so looking back needs less help than looking forward. Measured on LoCoMo, the bilingual and the chat
# fixtures (README, "The vector side"): 0.2 back beat 0.3 on all three with the mean of both forms.
CONTEXT_WEIGHT = 0.2
NEXT_CONTEXT_WEIGHT = 0.5
# A message that asks (questions.asks) lends its whole score to the message after it: a question repeats what is
# asked about, so the keyword side finds it first, while what answers it is the reply, which rarely repeats the
# words. Measured the same way, from 0.5: LoCoMo hybrid R@5 0.632 -> 0.648, MRR@10 0.481 -> 0.512; bilingual R@5
# 0.692 -> 0.739, MRR@10 0.510 -> 0.548; chat R@5 0.750 -> 0.783, MRR@10 0.506 -> 0.548 (0.75 and 0.8 gained less).
# What it lends includes what it got from the message before it: a question often takes its topic from what it
# follows ("take it to Hank" -> "is he expensive" -> "he did mine for 80"), so a question right after a hit passes
# that hit on to its reply even when the question itself matches nothing (README, "The vector side").
ANSWER_CONTEXT_WEIGHT = 1.0
# Where that reply is looked for: in a group chat the one asked often answers after someone else's line ("new
# phone day!!" -> "which one" -> "rivera plumbing any good?" -> "the Pixel 8"), so the first message within the next
# REPLY_WINDOW by the one asked gets the loan too, beside the next message (questions.answers). Measured (README, "The
# vector side"): lending to that message instead of the next lost two Korean questions whose asker turned to
# someone else; lending to both gained on the chat and bilingual fixtures. A message that answers through Discord's
# reply says which question it answers, however far below it comes: the first REPLY_WINDOW such replies get the
# loan as well (none of the benchmark datasets carries replies, so this is not measured).
REPLY_WINDOW = 3
CONTEXT_SOURCES = 50
# Author names are a column so "what did Ann say" can match Ann's messages. bm25() ranks the body column only: it
# divides by the length of the whole row, so a name matched in the author column would rank Ann's short messages
# above her long ones, and standardised, that spread outweighs the vector side's reading of which one answers. A
# name match instead adds the same score to each of that author's messages: what the name's bm25() term is worth at
# the average length (its IDF, as FTS5 works it out), times AUTHOR_WEIGHT. PostgreSQL's ts_rank does not normalise
# by length, so both stores now score a name alike. Measured on LoCoMo, whose questions name the speakers: hybrid
# R@10 0.748 -> 0.766, R@50 0.881 -> 0.895 (README, "First-stage recall on LoCoMo").
BODY_WEIGHT = 1.0
AUTHOR_WEIGHT = 1.0
# FTS5 scores every row its query matches (bm25() plus the join to messages: ~1.5 µs a row here), so the rows a
# query may match are capped: terms are taken rarest first while their summed document counts fit. A term over
# the cap only ranks (it adds to the score of rows the kept terms match); it cannot widen the match. Such words
# have a low IDF anyway, and the vector side covers them.
KEYWORD_MAX_POSTINGS = 4_000
# A long query (a pasted message) is cut to its first terms: each one costs a capped count.
KEYWORD_MAX_TERMS = 32
# Filtered vector search first asks for this many times more hits and drops the ones the filters reject;
# only if too few survive is the index searched again restricted to the matching row ids.
VECTOR_OVERFETCH = 4

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
# Each row ``c``'s previous row id in its channel, then the REPLY_WINDOW + 1 after it, nearest first; a store's
# statement adds the FROM that names the rows.
_NEXT_ID = """
  (SELECT n.id FROM messages AS n
   WHERE n.guild_id = c.guild_id AND n.channel_id = c.channel_id
     AND (n.created_at, n.message_id) > (c.created_at, c.message_id)
   ORDER BY n.created_at, n.message_id LIMIT 1 OFFSET {offset})"""
# Each row ``c``'s replies (Discord's reply), earliest first; the messages_reply_to index finds them.
_REPLY_ID = """
  (SELECT r.id FROM messages AS r
   WHERE r.reply_to_id = c.message_id AND r.guild_id = c.guild_id AND r.channel_id = c.channel_id
   ORDER BY r.created_at, r.message_id LIMIT 1 OFFSET {offset})"""
SELECT_NEIGHBOUR_IDS = """
SELECT c.id,
  (SELECT p.id FROM messages AS p
   WHERE p.guild_id = c.guild_id AND p.channel_id = c.channel_id
     AND (p.created_at, p.message_id) < (c.created_at, c.message_id)
   ORDER BY p.created_at DESC, p.message_id DESC LIMIT 1),""" + ",".join(
    [*(_NEXT_ID.format(offset=offset) for offset in range(REPLY_WINDOW + 1)),
     *(_REPLY_ID.format(offset=offset) for offset in range(REPLY_WINDOW))]) + "\n"
SELECT_NEIGHBOURS = SELECT_NEIGHBOUR_IDS + "FROM json_each(?) AS wanted CROSS JOIN messages AS c ON c.id = wanted.value"
SELECT_CANDIDATES = """
SELECT m.id, m.message_id, m.guild_id, m.channel_id, m.author_id, m.author_name, m.content, m.created_at
FROM json_each(?) AS wanted CROSS JOIN messages AS m ON m.id = wanted.value WHERE {where}
"""


def _standardise(hits: Hits) -> tuple[dict[int, float], float]:
    """Z-scores of one retriever's scores for this query, and the score of a message it did not return.

    That floor is the lowest z-score: a missing message ranked below everything the side kept. A lone or tied
    list carries no spread, so its hits count as uniformly strong (1.0) over a floor of 0.
    """
    if not hits:
        return {}, 0.0
    scores = np.fromiter((score for _, score in hits), dtype=np.float64, count=len(hits))
    spread = float(scores.std())
    if len(hits) < 2 or spread < 1e-9:
        return {rowid: 1.0 for rowid, _ in hits}, 0.0
    mean = float(scores.mean())
    standard = {rowid: (score - mean) / spread for rowid, score in hits}
    return standard, min(standard.values())


def fuse(vector: Hits, keyword: Hits, vector_weight: float = VECTOR_WEIGHT) -> tuple[dict[int, float], float]:
    """Convex combination of the two standardised score lists, and the fused score of a message neither returned.

    A side with no hits contributes nothing, so the other side's order stands.
    """
    sides = [(weight, *_standardise(hits)) for weight, hits in ((vector_weight, vector), (1.0 - vector_weight, keyword))
             if hits]
    rowids = set().union(*(scores.keys() for _, scores, _ in sides))
    fused = {rowid: sum(weight * scores.get(rowid, floor) for weight, scores, floor in sides) for rowid in rowids}
    return fused, sum(weight * floor for weight, _, floor in sides)


@dataclass(frozen=True, slots=True)
class Fused:
    """One query's fused scores, the score of a message neither side returned, which side found each, and the
    hits ranked after every scored message (``tail``, best first)."""

    scores: dict[int, float]
    floor: float
    sources: dict[int, list[str]]
    tail: list[int] = field(default_factory=list)


def fuse_sides(query: str, scripts: str, vector: Hits, keyword: Hits) -> Fused:
    """``fuse`` for a hybrid search, the vector side weighted by the share of ``query`` the model reads (``scripts``).

    When the model reads no more than ``MIN_COVERED_SHARE`` of the query's words and the keyword side found
    something, the vector side's nearest messages are noise at the top: they are left out of the fusion and only
    fill the list after everything the keyword side ranked (and its spread to neighbours), in their own order, so a
    list is never cut short while a side still has candidates for the reranker. A single side (one mode, or one side
    empty) keeps its own order.
    """
    weight, tail = VECTOR_WEIGHT, []
    if vector and keyword:
        share = covered_share(query, scripts)
        if share <= MIN_COVERED_SHARE:
            tail, vector = [rowid for rowid, _ in vector], []
        else:
            weight *= share
    scores, floor = fuse(vector, keyword, weight)
    sources: dict[int, list[str]] = {rowid: ["vector"] for rowid, _ in vector}
    for rowid, _ in keyword:
        sources.setdefault(rowid, []).append("keyword")
    return Fused(scores, floor, sources, [rowid for rowid in tail if rowid not in scores])


def spread_to_neighbours(scores: dict[int, float], neighbours: Neighbours, floor: float,
                         weights: tuple[float, float] = (CONTEXT_WEIGHT, NEXT_CONTEXT_WEIGHT),
                         asking: Collection[int] = ()) -> dict[int, float]:
    """Each source's positive score, times ``weights`` (previous, next), added to its previous and next message in
    the channel; a source in ``asking`` (a question) lends ANSWER_CONTEXT_WEIGHT of it to its reply instead.

    A question that is the next message of a source lends on too: what its own score and that source's loan come
    to, times ANSWER_CONTEXT_WEIGHT, goes to its reply (a source that asks adds the loan it got the same way, and
    so does a next message that answers a question with a question). A neighbour that was not a candidate starts
    from ``floor``, the score of a message no side returned.
    """
    spread, received, replies = dict(scores), {}, {}
    for rowid, (previous, following, answers, following_answers) in neighbours.items():
        score = max(scores[rowid], 0.0)
        if previous is not None and weights[0] * score > 0.0:
            spread[previous] = spread.get(previous, floor) + weights[0] * score
        if rowid in asking:  # a question's loan is added below, with what it got itself
            replies[rowid] = answers
            for reply in answers:
                received[reply] = received.get(reply, 0.0) + ANSWER_CONTEXT_WEIGHT * score
        elif following is not None:
            received[following] = received.get(following, 0.0) + weights[1] * score
            if weights[1] * score > 0.0:
                spread[following] = spread.get(following, floor) + weights[1] * score
        if following in asking and following not in neighbours:
            replies[following] = following_answers
    for question, answers in replies.items():
        loan = ANSWER_CONTEXT_WEIGHT * max(scores.get(question, floor) + received.get(question, 0.0), 0.0)
        if loan > 0.0:
            for reply in answers:
                spread[reply] = spread.get(reply, floor) + loan
    return spread


def neighbours_in(window: Window, rows: dict[int, Row]) -> Neighbours:
    """Each source's previous and next message from ``window``, and what may answer it and its next message, were
    they questions: among the next REPLY_WINDOW messages that pass (``rows``), by questions.answers, and for the
    source, its replies (Discord's reply) that pass too."""

    def author(rowid: int | None) -> Any:
        return rows[rowid][ROW_AUTHOR] if rowid in rows else None

    def answers(question: int, asked: int | None, after: tuple[int, ...]) -> tuple[int, ...]:
        passing = [(rowid, author(rowid)) for rowid in after[:REPLY_WINDOW] if rowid in rows]
        return questions.answers(author(question), author(asked), passing)

    neighbours: Neighbours = {}
    for rowid, (previous, after, replies) in window.items():
        following = after[0] if after else None
        guessed = answers(rowid, previous, after)
        replied = tuple(reply for reply in replies if reply in rows and reply not in guessed)
        neighbours[rowid] = (previous, following, guessed + replied,
                             () if following is None else answers(following, rowid, after[1:]))
    return neighbours


def _narrows(filters: SearchFilters) -> bool:
    return any(value is not None for value in (
        filters.channel_ids, filters.author_ids, filters.after, filters.before, filters.allowed_channel_ids))


def _json_ids(ids: Sequence[int]) -> str:
    return json.dumps([int(i) for i in ids])


class FirstStage:
    """The first stage every store shares: each side's hits under the filters, fused by standardised scores,
    widened to channel neighbours, then the passing rows ranked. A store supplies the three look-ups."""

    def __init__(self, embedder: Embedder, profile: MemoryProfile) -> None:
        self._embedder = embedder
        self.vector_candidates: int = profile.vector_candidates
        self.keyword_candidates: int = profile.keyword_candidates
        self.scripts = model_scripts(profile.embedding_model, profile.embedding_scripts)

    async def search(self, query: str, filters: SearchFilters, limit: int, mode: Mode = "hybrid") -> list[Candidate]:
        """The best ``limit`` messages for ``query`` that pass ``filters``, best first."""
        checked_limit(limit)
        if not query.strip():
            return []
        want_vector, want_keyword = mode in ("hybrid", "vector"), mode in ("hybrid", "keyword")
        vector, keyword = await asyncio.gather(
            self._vector_hits(query, filters, max(self.vector_candidates, limit)) if want_vector else _none(),
            self._keyword_hits(query, filters, max(self.keyword_candidates, limit)) if want_keyword else _none(),
        )
        fused = fuse_sides(query, self.scripts, vector, keyword)
        if not fused.scores:
            return []
        strongest = sorted(fused.scores, key=fused.scores.__getitem__, reverse=True)[:CONTEXT_SOURCES]
        window, rows = await self._context_and_rows(strongest, [*fused.scores, *fused.tail], filters)
        neighbours = neighbours_in(window, rows)
        heard = {*neighbours, *(following for _, following, _, _ in neighbours.values())}
        asking = {rowid for rowid in heard if rowid in rows and questions.asks(rows[rowid][ROW_CONTENT])}
        scores = spread_to_neighbours(fused.scores, neighbours, fused.floor, asking=asking)
        ranked = sorted((rowid for rowid in scores if rowid in rows), key=lambda rowid: (-scores[rowid], rowid))
        if len(ranked) < limit and fused.tail:
            # Below everything ranked, each a step lower than the one before (a candidate's score orders it).
            low = min((scores[rowid] for rowid in ranked), default=fused.floor) - 1.0
            tail = [rowid for rowid in fused.tail if rowid not in scores and rowid in rows]
            scores.update((rowid, low - step) for step, rowid in enumerate(tail))
            fused.sources.update((rowid, ["vector"]) for rowid in tail)
            ranked += tail
        return [_candidate(rows[rowid], scores[rowid], fused.sources.get(rowid, ["context"]), rank)
                for rank, rowid in enumerate(ranked[:limit], start=1)]

    async def _embed_query(self, query: str) -> np.ndarray:
        """The query's vector as a one-row matrix, read as every store's vector side reads it."""
        return await self._embedder.embed_queries([text.embedding_query(query)])

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        """The ``k`` nearest messages that pass ``filters``, as (row id, inner product), best first."""
        raise NotImplementedError

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        """The ``k`` best keyword matches that pass ``filters``, as (row id, higher-is-better score)."""
        raise NotImplementedError

    async def _context_and_rows(self, sources: list[int], candidates: list[int],
                                filters: SearchFilters) -> tuple[Window, dict[int, Row]]:
        """The channel neighbours of ``sources``, and the rows of the candidates and those neighbours that pass."""
        raise NotImplementedError


class SearchEngine(FirstStage):
    """Hybrid first-stage search over one MemoryStore and its per-guild vector indexes.

    SQLite runs on the store's reader threads (each step's queries in one hop), FAISS on the index registry's
    thread and the query embedding on the model's thread; the event loop only awaits them.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, indexes: IndexRegistry,
                 profile: MemoryProfile) -> None:
        super().__init__(embedder, profile)
        self._store = store
        self._indexes = indexes

    async def _context_and_rows(self, sources: list[int], candidates: list[int],
                                filters: SearchFilters) -> tuple[Window, dict[int, Row]]:
        return await self._store.read(_context_and_rows, sources, candidates, filters)

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        vectors = await self._embed_query(query)
        if not (_narrows(filters) or filters.exclude_message_ids):
            return await self._index_search(filters.guild_id, vectors, k, None)
        # Most filtered searches (a permission set, a time range) leave most of a guild: over-fetch and drop.
        hits = await self._index_search(filters.guild_id, vectors, k * VECTOR_OVERFETCH, None)
        passing = await self._store.read(_passing_ids, [rowid for rowid, _ in hits], filters)
        kept = [(rowid, score) for rowid, score in hits if rowid in passing]
        if len(kept) >= k or len(hits) < k * VECTOR_OVERFETCH:
            return kept[:k]
        allowed = await self._store.rowids_matching(filters)
        return await self._index_search(filters.guild_id, vectors, k, allowed)

    async def _index_search(self, guild_id: int, vectors: np.ndarray, k: int, allowed: np.ndarray | None) -> Hits:
        scores, ids = await self._indexes.search(guild_id, vectors, k, allowed)
        return [(int(rowid), float(score)) for rowid, score in zip(ids[0], scores[0]) if rowid >= 0]

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        terms = text.keyword_terms(query)[:KEYWORD_MAX_TERMS]
        if not terms:
            return []
        return await self._store.read(_keyword_hits, terms, filters, k)


# -- on a reader thread: each function is one hop's queries ----------------------------------------------------


def _keyword_hits(connection: sqlite3.Connection, terms: list[str], filters: SearchFilters, k: int) -> Hits:
    query = _keyword_query(connection, terms)
    if query is None:
        return []
    expression, names = query
    where, params = filter_clause(filters)
    by_author = " + ".join([AUTHOR_MATCH] * len(names)) or "0.0"
    statement = SELECT_KEYWORD.format(by_author=by_author, where=where)
    named = [value for name, score in names for value in (score, name)]
    rows = connection.execute(statement, [BODY_WEIGHT, *named, expression, *params, k]).fetchall()
    # bm25() is lower-is-better; flip it so every score here is higher-is-better.
    return [(rowid, -rank) for rowid, rank in rows]


def _keyword_query(connection: sqlite3.Connection, terms: list[str]) -> tuple[str, list[tuple[str, float]]] | None:
    """The MATCH string for ``terms`` (common terms only rank, author names match their authors' messages), and for
    each term some display name holds, the MATCH string of those names and the score a match adds."""

    def documents(term: text.Term) -> int:
        matching = text.match_expression([term])
        return connection.execute(COUNT_MATCHES, [matching, KEYWORD_MAX_POSTINGS + 1]).fetchone()[0]

    postings = {term: documents(text.Term(term)) for term in terms}
    postings.update((term, documents(text.Term(term))) for term in characters_alone(postings))
    terms = list(postings)
    within = within_budget(postings)
    matching: list[text.Term] = []
    authored: dict[text.Term, int] = {}
    for term in within:
        name = text.Term(term, column="author")
        authored[name] = documents(name)
        # A word found at least as often in display names as in messages means a person: match their messages.
        as_author = 2 * authored[name] >= postings[term] > 0
        matching.append(name if as_author else text.Term(term))
    ranking = [text.Term(term) for term in terms if term not in within]
    expression = text.match_expression(matching, ranking_only=ranking)
    if expression is None:
        return None
    indexed = _rows_indexed(connection) if any(authored.values()) else 0
    names = [(text.match_expression([name]), AUTHOR_WEIGHT * _idf(indexed, count))
             for name, count in authored.items() if count]
    return expression, names


def _idf(rows: int, matching: int) -> float:
    """A term's IDF as FTS5's bm25() works it out: kept just above zero for a term in half the rows or more."""
    return max(math.log((rows - matching + 0.5) / (matching + 0.5)), 1e-6)


def _rows_indexed(connection: sqlite3.Connection) -> int:
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


def characters_alone(counts: dict[str, int]) -> list[str]:
    """The characters to search alone (text.characters) of the Han bigrams no message holds, unless a bigram that
    is found already holds them: a found word is not counted again through its characters."""
    found = "".join(term for term, count in counts.items() if count > 0)
    alone: list[str] = []
    for term, count in counts.items():
        if count == 0:
            alone.extend(c for c in text.characters(term) if c not in found and c not in counts and c not in alone)
    return alone


def within_budget(counts: dict[str, int]) -> list[str]:
    """The terms that decide which rows match, in query order: rarest first while their summed counts (each counted
    to just above KEYWORD_MAX_POSTINGS) fit it. The others only rank the rows these match."""
    budget, kept = KEYWORD_MAX_POSTINGS, set()
    for term in sorted(counts, key=counts.__getitem__):
        if counts[term] <= budget:
            budget -= counts[term]
            kept.add(term)
    return [term for term in counts if term in kept]


def _context_and_rows(connection: sqlite3.Connection, sources: list[int], candidates: list[int],
                      filters: SearchFilters) -> tuple[Window, dict[int, Row]]:
    """The channel neighbours of ``sources``, and the rows of the candidates and those neighbours that pass."""
    window = window_of(connection.execute(SELECT_NEIGHBOURS, [_json_ids(sources)]))
    where, params = filter_clause(filters)
    wanted = _json_ids(rows_wanted(candidates, window))
    rows = connection.execute(SELECT_CANDIDATES.format(where=where), [wanted, *params])
    return window, {row[0]: row[1:] for row in rows}


def window_of(rows: Iterable[Sequence[Any]]) -> Window:
    """SELECT_NEIGHBOUR_IDS rows as a Window: the messages after a source stop where its channel does, its replies
    where they do."""
    replies_at = 2 + REPLY_WINDOW + 1  # a row: the source, its previous, REPLY_WINDOW + 1 after it, its replies

    def present(ids: Sequence[Any]) -> tuple[int, ...]:
        return tuple(rowid for rowid in ids if rowid is not None)

    return {row[0]: (row[1], present(row[2:replies_at]), present(row[replies_at:])) for row in rows}


def rows_wanted(candidates: list[int], window: Window) -> list[int]:
    """The row ids to read for a search: its candidates and every message in their sources' window, in order."""
    around = ((previous, *after, *replies) for previous, after, replies in window.values())
    return sorted(set(candidates).union(*around) - {None})


def _candidate(row: Row, score: float, sources: list[str], rank: int) -> Candidate:
    """A ``SELECT_CANDIDATES`` row (without its row id) as a search result."""
    message_id, guild_id, channel_id, author_id, author_name, content, created_at = row
    return Candidate(message_id=message_id, guild_id=guild_id, channel_id=channel_id, author_id=author_id,
                     author_name=author_name, content=content, created_at=from_timestamp(created_at).isoformat(),
                     score=score, sources=sources, rank=rank)


def _passing_ids(connection: sqlite3.Connection, rowids: list[int], filters: SearchFilters) -> set[int]:
    if not rowids:
        return set()
    where, params = filter_clause(filters)
    return {row[0] for row in connection.execute(SELECT_PASSING.format(where=where), [_json_ids(rowids), *params])}


async def _none() -> Hits:
    return []
