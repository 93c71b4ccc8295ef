"""PostgresSearchEngine: the SearchEngine's first stage over PostgreSQL — pgvector for vectors, tsvector for words.

The same steps as search.py: each side's candidates under the same filters, fused by standardised scores,
widened to channel neighbours. Only where the candidates come from differs; the fusion is search.py's own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from ..embedding import Embedder
from ..records import Candidate, SearchFilters, checked_limit
from ..rows import from_timestamp
from ..search import CONTEXT_SOURCES, KEYWORD_MAX_TERMS, Hits, Mode, fuse, spread_to_neighbours
from . import fts
from .filters import filter_clause
from .store import PostgresStore

if TYPE_CHECKING:
    from ..profile import MemoryProfile

__all__ = ("PostgresSearchEngine",)

log = logging.getLogger(__name__)

# HNSW visits this many candidates at least (pgvector's default is 40); the filters are applied to what it visits,
# so a filtered search asks for more. pgvector caps it at 1000.
EF_SEARCH_MIN = 100
EF_SEARCH_MAX = 1000
SET_EF_SEARCH = "SELECT set_config('hnsw.ef_search', $1, true)"
# Cosine similarity, as FAISS's inner product of unit vectors: 1 - cosine distance.
SELECT_VECTOR = """
SELECT e.message_rowid, 1 - (e.vector <=> $1) AS score
FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid
WHERE e.model = $2 AND {where}
ORDER BY e.vector <=> $1 LIMIT $3
"""
# ts_rank's weights are {D, C, B, A}: body words (A) and author words (B) count alike, as in the SQLite side.
SELECT_KEYWORD = """
SELECT m.id, ts_rank('{{0, 0, 1, 1}}', m.document, q) AS rank
FROM messages AS m, to_tsquery('simple', $1) AS q
WHERE m.document @@ q AND {where}
ORDER BY rank DESC, m.id LIMIT $2
"""
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
FROM messages AS c WHERE c.guild_id = $1 AND c.id = ANY($2::bigint[])
"""
SELECT_CANDIDATES = """
SELECT m.id, m.message_id, m.guild_id, m.channel_id, m.author_id, m.author_name, m.content, m.created_at
FROM messages AS m WHERE m.id = ANY($1::bigint[]) AND {where}
"""


class PostgresSearchEngine:
    """Hybrid first-stage search over a PostgresStore; same ``search`` as SearchEngine's."""

    def __init__(self, store: PostgresStore, embedder: Embedder, profile: MemoryProfile) -> None:
        self._store = store
        self._embedder = embedder
        self.vector_candidates: int = profile.vector_candidates
        self.keyword_candidates: int = profile.keyword_candidates

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
        scores, floor = fuse(vector, keyword)
        if not scores:
            return []
        sources_of = {rowid: ["vector"] for rowid, _ in vector}
        for rowid, _ in keyword:
            sources_of.setdefault(rowid, []).append("keyword")
        strongest = sorted(scores, key=scores.__getitem__, reverse=True)[:CONTEXT_SOURCES]
        neighbours = await self._neighbours(filters.guild_id, strongest)
        wanted = set(scores).union(*neighbours.values()) - {None}
        rows = await self._rows(sorted(wanted), filters)
        scores = spread_to_neighbours(scores, neighbours, floor)
        ranked = sorted((rowid for rowid in scores if rowid in rows), key=lambda rowid: (-scores[rowid], rowid))
        return [_candidate(rows[rowid], scores[rowid], sources_of.get(rowid, ["context"]), rank)
                for rank, rowid in enumerate(ranked[:limit], start=1)]

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        vectors = await self._embedder.embed_queries([query])
        where, params = filter_clause(filters, first=4)
        ef_search = min(max(EF_SEARCH_MIN, 4 * k), EF_SEARCH_MAX)
        async with self._store.acquire() as conn, conn.transaction():
            await conn.execute(SET_EF_SEARCH, str(ef_search))
            rows = await conn.fetch(SELECT_VECTOR.format(where=where), np.asarray(vectors[0], dtype=np.float32),
                                    self._embedder.model_name, k, *params)
        return [(row[0], float(row[1])) for row in rows]

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        expression = fts.tsquery(fts.query_words(query)[:KEYWORD_MAX_TERMS])
        if expression is None:
            return []
        where, params = filter_clause(filters, first=3)
        rows = await self._store.fetch(SELECT_KEYWORD.format(where=where), expression, k, *params)
        return [(row[0], float(row[1])) for row in rows]

    async def _neighbours(self, guild_id: int, sources: list[int]) -> dict[int, tuple[int | None, int | None]]:
        rows = await self._store.fetch(SELECT_NEIGHBOURS, guild_id, sources)
        return {row[0]: (row[1], row[2]) for row in rows}

    async def _rows(self, rowids: list[int], filters: SearchFilters) -> dict[int, tuple[Any, ...]]:
        where, params = filter_clause(filters, first=2)
        rows = await self._store.fetch(SELECT_CANDIDATES.format(where=where), rowids, *params)
        return {row[0]: tuple(row)[1:] for row in rows}


def _candidate(row: tuple[Any, ...], score: float, sources: list[str], rank: int) -> Candidate:
    message_id, guild_id, channel_id, author_id, author_name, content, created_at = row
    return Candidate(message_id=message_id, guild_id=guild_id, channel_id=channel_id, author_id=author_id,
                     author_name=author_name, content=content, created_at=from_timestamp(created_at).isoformat(),
                     score=score, sources=sources, rank=rank)


async def _none() -> Hits:
    return []
