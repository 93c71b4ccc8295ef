"""SearchEngine: first-stage retrieval — FAISS vectors and FTS5 BM25, fused, widened to neighbours, filtered."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from . import text
from .embedding import EmbeddingService
from .records import SearchFilters
from .store import MemoryStore, filter_clause, from_timestamp
from .vector_index import IndexRegistry

__all__ = ("Mode", "SearchEngine", "fuse", "spread_to_neighbours")

log = logging.getLogger(__name__)

Mode = Literal["hybrid", "vector", "keyword"]
Hits = list[tuple[int, float]]

# Share of the fused score that comes from the vector side. Both sides are standardised per query first
# (z-scores), so this weighs evidence, not score scales. Chat questions name people and things the keyword
# side matches exactly; MiniLM adds paraphrases. Swept 0.3–0.5 on LoCoMo: flat from 0.3 to 0.4.
VECTOR_WEIGHT = 0.35
# A message is read in the context of the one before and after it: a strong hit lends this share of its
# (positive) score to its channel neighbours, which finds answers given in the next turn.
CONTEXT_WEIGHT = 0.3
CONTEXT_SOURCES = 50
# BM25 column weights (body, author). Author names are a column so "what did Ann say" can match Ann's messages.
BODY_WEIGHT = 1.0
AUTHOR_WEIGHT = 1.0
# FTS5 scores every row that matches any term (measured ~5 µs a row with bm25() on this loaded 2-core box), so
# terms are kept rarest first while their summed document counts stay under this: one very common word cannot
# make a query score a large part of a big table. Such words have a low IDF anyway; the vector side covers them.
KEYWORD_MAX_POSTINGS = 10_000
# Filtered vector search first asks for this many times more hits and drops the ones the filters reject;
# only if too few survive is the index searched again restricted to the matching row ids.
VECTOR_OVERFETCH = 4

CREATE_VOCAB = "CREATE VIRTUAL TABLE IF NOT EXISTS temp.messages_fts_vocab USING fts5vocab(main, messages_fts, col)"
SELECT_TERM_COUNTS = """
SELECT term, col, doc FROM temp.messages_fts_vocab WHERE term IN (SELECT value FROM json_each(?))
"""
SELECT_KEYWORD = """
SELECT messages_fts.rowid, bm25(messages_fts, ?, ?) AS rank
FROM messages_fts JOIN messages AS m ON m.id = messages_fts.rowid
WHERE messages_fts MATCH ? AND {where}
ORDER BY rank LIMIT ?
"""
SELECT_PASSING = "SELECT m.id FROM messages AS m WHERE m.id IN (SELECT value FROM json_each(?)) AND {where}"
SELECT_NEIGHBOURS = """
SELECT c.id,
  (SELECT p.id FROM messages AS p
   WHERE p.guild_id = c.guild_id AND p.channel_id = c.channel_id
     AND (p.created_at, p.message_id) < (c.created_at, c.message_id)
   ORDER BY p.created_at DESC, p.message_id DESC LIMIT 1),
  (SELECT n.id FROM messages AS n
   WHERE n.guild_id = c.guild_id AND n.channel_id = c.channel_id
     AND (n.created_at, n.message_id) > (c.created_at, c.message_id)
   ORDER BY n.created_at, n.message_id LIMIT 1)
FROM messages AS c WHERE c.id IN (SELECT value FROM json_each(?))
"""
SELECT_CANDIDATES = """
SELECT m.id, m.message_id, m.guild_id, m.channel_id, m.author_id, m.author_name, m.content, m.created_at
FROM messages AS m WHERE m.id IN (SELECT value FROM json_each(?)) AND {where}
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


def spread_to_neighbours(scores: dict[int, float], neighbours: dict[int, tuple[int | None, int | None]],
                         floor: float, weight: float = CONTEXT_WEIGHT) -> dict[int, float]:
    """Each source's positive score, times ``weight``, added to its previous and next message in the channel.

    A neighbour that was not a candidate starts from ``floor``, the score of a message no side returned.
    """
    spread = dict(scores)
    for rowid, pair in neighbours.items():
        lent = weight * max(scores[rowid], 0.0)
        for neighbour in pair:
            if neighbour is not None and lent > 0.0:
                spread[neighbour] = spread.get(neighbour, floor) + lent
    return spread


def _narrows(filters: SearchFilters) -> bool:
    return any(value is not None for value in (
        filters.channel_ids, filters.author_ids, filters.after, filters.before, filters.allowed_channel_ids))


def _json_ids(ids: Sequence[int]) -> str:
    return json.dumps([int(i) for i in ids])


class SearchEngine:
    """Hybrid first-stage search over one MemoryStore and its per-guild vector indexes.

    SQLite runs on aiosqlite's thread, FAISS on the index registry's thread and the query embedding on the
    model's thread; the event loop only awaits them.
    """

    def __init__(self, store: MemoryStore, embedder: EmbeddingService, indexes: IndexRegistry, profile: Any) -> None:
        self._store = store
        self._embedder = embedder
        self._indexes = indexes
        self.vector_candidates: int = profile.vector_candidates
        self.keyword_candidates: int = profile.keyword_candidates
        self._vocab_ready = False

    async def search(self, query: str, filters: SearchFilters, limit: int, mode: Mode = "hybrid") -> list[dict]:
        """The best ``limit`` messages for ``query`` that pass ``filters``, as candidate dicts, best first."""
        if limit <= 0 or not query.strip():
            return []
        want_vector, want_keyword = mode in ("hybrid", "vector"), mode in ("hybrid", "keyword")
        vector, keyword = await asyncio.gather(
            self._vector_hits(query, filters, max(self.vector_candidates, limit)) if want_vector else _none(),
            self._keyword_hits(query, filters, max(self.keyword_candidates, limit)) if want_keyword else _none(),
        )
        scores, floor = fuse(vector, keyword)
        if not scores:
            return []
        sources_of = {rowid: ["vector"] for rowid, _ in vector}
        for rowid, _ in keyword:
            sources_of.setdefault(rowid, []).append("keyword")
        strongest = sorted(scores, key=scores.__getitem__, reverse=True)[:CONTEXT_SOURCES]
        scores = spread_to_neighbours(scores, await self._neighbours(strongest), floor)
        ranked = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))
        # Neighbours were not filtered yet; look at enough of the list that the filters can leave ``limit``.
        rows = await self._passing_rows(ranked[: limit + 2 * CONTEXT_SOURCES], filters)
        results: list[dict] = []
        for rowid in ranked:
            row = rows.get(rowid)
            if row is None:
                continue
            row.update(score=scores[rowid], sources=sources_of.get(rowid, ["context"]), rank=len(results) + 1)
            results.append(row)
            if len(results) == limit:
                break
        return results

    # -- vector side ----------------------------------------------------------------------------------------

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        vectors = await self._embedder.embed([query])
        if not (_narrows(filters) or filters.exclude_message_ids):
            return await self._index_search(filters.guild_id, vectors, k, None)
        # Most filtered searches (a permission set, a time range) leave most of a guild: over-fetch and drop.
        hits = await self._index_search(filters.guild_id, vectors, k * VECTOR_OVERFETCH, None)
        passing = await self._passing_ids([rowid for rowid, _ in hits], filters)
        kept = [(rowid, score) for rowid, score in hits if rowid in passing]
        if len(kept) >= k or len(hits) < k * VECTOR_OVERFETCH:
            return kept[:k]
        allowed = await self._store.rowids_matching(filters)
        return await self._index_search(filters.guild_id, vectors, k, allowed)

    async def _index_search(self, guild_id: int, vectors: np.ndarray, k: int, allowed: np.ndarray | None) -> Hits:
        scores, ids = await self._indexes.search(guild_id, vectors, k, allowed)
        return [(int(rowid), float(score)) for rowid, score in zip(ids[0], scores[0]) if rowid >= 0]

    # -- keyword side ---------------------------------------------------------------------------------------

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        expression = await self._keyword_expression(text.keyword_terms(query))
        if expression is None:
            return []
        where, params = filter_clause(filters)
        rows = await self._store.execute_fetchall(
            SELECT_KEYWORD.format(where=where), [BODY_WEIGHT, AUTHOR_WEIGHT, expression, *params, k])
        # bm25() is lower-is-better; flip it so every score here is higher-is-better.
        return [(rowid, -rank) for rowid, rank in rows]

    async def _keyword_expression(self, terms: list[str]) -> str | None:
        """The MATCH string for ``terms``: over-common terms dropped, author names matched as authors."""
        if not terms:
            return None
        counts = await self._term_counts(terms)
        budget = KEYWORD_MAX_POSTINGS
        kept: list[text.Term] = []
        for term in sorted(terms, key=lambda t: sum(counts.get(text.index_term(t), {}).values())):
            by_column = counts.get(text.index_term(term), {})
            postings = sum(by_column.values())
            if postings > budget:
                log.debug("Keyword term dropped as too common: %d postings", postings)
                continue
            budget -= postings
            # A word used more as a display name than in messages means a person: match their messages.
            as_author = by_column.get("author", 0) > 0 and by_column.get("author", 0) >= by_column.get("body", 0)
            kept.append(text.Term(term, column="author" if as_author else None))
        order = {term: position for position, term in enumerate(terms)}
        kept.sort(key=lambda t: order[t.text])
        return text.match_expression(kept)

    async def _term_counts(self, terms: list[str]) -> dict[str, dict[str, int]]:
        """Documents per column for each term, as the index stores it (stemmed)."""
        keys = _json_strings(sorted({text.index_term(term) for term in terms}))
        try:
            if not self._vocab_ready:
                # A temp table on the store's connection: it holds no data, it reads messages_fts's index.
                await self._store.execute_fetchall(CREATE_VOCAB)
                self._vocab_ready = True
            rows = await self._store.execute_fetchall(SELECT_TERM_COUNTS, [keys])
        except sqlite3.OperationalError:
            # Created inside a writer's transaction that was rolled back: make it again next time.
            log.warning("Keyword term statistics unavailable; searching every term this time", exc_info=True)
            self._vocab_ready = False
            return {}
        counts: dict[str, dict[str, int]] = {}
        for term, column, docs in rows:
            counts.setdefault(term, {})[column] = docs
        return counts

    # -- rows -----------------------------------------------------------------------------------------------

    async def _neighbours(self, rowids: list[int]) -> dict[int, tuple[int | None, int | None]]:
        if not rowids:
            return {}
        rows = await self._store.execute_fetchall(SELECT_NEIGHBOURS, [_json_ids(rowids)])
        return {rowid: (previous, following) for rowid, previous, following in rows}

    async def _passing_ids(self, rowids: list[int], filters: SearchFilters) -> set[int]:
        if not rowids:
            return set()
        where, params = filter_clause(filters)
        rows = await self._store.execute_fetchall(SELECT_PASSING.format(where=where), [_json_ids(rowids), *params])
        return {row[0] for row in rows}

    async def _passing_rows(self, rowids: list[int], filters: SearchFilters) -> dict[int, dict]:
        where, params = filter_clause(filters)
        rows = await self._store.execute_fetchall(SELECT_CANDIDATES.format(where=where), [_json_ids(rowids), *params])
        return {
            row[0]: {
                "message_id": row[1],
                "guild_id": row[2],
                "channel_id": row[3],
                "author_id": row[4],
                "author_name": row[5],
                "content": row[6],
                "created_at": from_timestamp(row[7]).isoformat(),
            }
            for row in rows
        }


async def _none() -> Hits:
    return []


def _json_strings(values: Sequence[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)
