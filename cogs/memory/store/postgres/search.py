"""PostgresSearchEngine: the first stage over PostgreSQL — pgvector for vectors, tsvector for words.

The same steps as store/sqlite/search.py (search/first_stage.py's FirstStage runs them): each side's candidates under
the same filters, fused by standardised scores, widened to channel neighbours. Only where the candidates come from
differs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...records import SearchFilters
from ...search.context import Window, rows_wanted, window_of
from ...search.first_stage import FirstStage, RecentMessage
from ...search.fusion import Hits
from ...search.terms import characters_alone, within_budget
from ...vectors.embedding import Embedder
from ..neighbours import select_neighbour_ids
from ..rows import AuthorSeen, CandidateRow, authors_of, candidate_row
from . import bm25, fts
from .dashboard_rows import SELECT_AUTHOR_NAMES
from .filters import filter_clause
from .store import PostgresStore

if TYPE_CHECKING:
    from ...runtime.profile import MemoryProfile

__all__ = ("PostgresSearchEngine",)

log = logging.getLogger(__name__)

# HNSW visits this many candidates at least (pgvector's default is 40); the filters are applied to what it visits,
# so a filtered search asks for more. pgvector caps it at 1000.
EF_SEARCH_MIN = 100
EF_SEARCH_MAX = 1000
SET_EF_SEARCH = "SELECT set_config('hnsw.ef_search', $1, true)"
# The inner product, as FAISS scores on the SQLite side (stored vectors are not unit length, vectors.py): pgvector's
# ``<#>`` is its negative.
VECTOR_SCORES = """
SELECT e.message_rowid, -(e.vector <#> $1) AS score
FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid
WHERE e.model = $2 AND {where}
"""
SELECT_VECTOR = VECTOR_SCORES + "ORDER BY e.vector <#> $1 LIMIT $3"
# The HNSW index serves only ``ORDER BY vector <#> $1`` and filters what its ef_search nearest hold (pgvector
# before 0.8 has no iterative scan), so a guild with few of the database's vectors, or a narrow filter, can get
# fewer than k. Ordered by the score instead, the planner cannot use it: every row that passes is compared.
SELECT_VECTOR_EXACT = VECTOR_SCORES + "ORDER BY score DESC, e.message_rowid LIMIT $3"
# The guild's messages a word matches, counted only up to a cap: the count stops there, so a very common word costs
# no more than a rare one (the SQLite side's posting budget, RankingTuning.keyword_max_postings).
COUNT_MATCHES = """
SELECT (
    SELECT count(*) FROM (
        SELECT 1 FROM messages AS m WHERE m.guild_id = $1 AND m.document @@ to_tsquery('simple', w.q) LIMIT $3
    ) AS matched
) FROM unnest($2::text[]) WITH ORDINALITY AS w(q, position) ORDER BY w.position
"""
NEIGHBOURS_FROM = "FROM messages AS c WHERE c.guild_id = $1 AND c.id = ANY($2::bigint[])"
# The row ids of one guild's messages named by their Discord ids, and the Discord id each replies to.
SELECT_ROWIDS = "SELECT id, reply_to_id FROM messages WHERE guild_id = $1 AND message_id = ANY($2::bigint[])"
SELECT_CANDIDATES = """
SELECT m.id, m.message_id, m.guild_id, m.channel_id, m.parent_channel_id, m.author_id, m.author_name, m.content,
       m.created_at, m.reply_to_id
FROM messages AS m WHERE m.id = ANY($1::bigint[]) AND {where}
"""

# A channel's last messages, newest first (the messages_channel_order index reads them in order).
SELECT_RECENT_IN_CHANNEL = """
SELECT message_id, author_id, reply_to_id, content FROM messages
WHERE guild_id = $1 AND channel_id = $2 ORDER BY created_at DESC, message_id DESC LIMIT $3
"""

# The guild's channel names as last seen (its members' come from author_names' query, folded by rows.authors_of).
SELECT_GUILD_CHANNELS = "SELECT id, name FROM place_names WHERE guild_id = $1 AND kind = 'channel'"


class PostgresSearchEngine(FirstStage):
    """Hybrid first-stage search over a PostgresStore; same ``search`` as SqliteSearchEngine's."""

    def __init__(self, store: PostgresStore, embedder: Embedder, profile: MemoryProfile) -> None:
        super().__init__(embedder, profile)
        self._store = store
        self._guild_stats = bm25.GuildStatsCache(store)

    async def _vector_hits(self, query: str, filters: SearchFilters, k: int) -> Hits:
        vectors = await self._embed_query(query)
        where, params = filter_clause(filters, first=4)
        arguments = (np.asarray(vectors[0], dtype=np.float32), self._embedder.model_name, k, *params)
        ef_search = min(max(EF_SEARCH_MIN, 4 * k), EF_SEARCH_MAX)
        async with self._store.acquire() as conn, conn.transaction():
            await conn.execute(SET_EF_SEARCH, str(ef_search))
            rows = await conn.fetch(SELECT_VECTOR.format(where=where), *arguments)
            if len(rows) < k:  # fewer pass among the index's nearest than asked: compare every row that passes
                rows = await conn.fetch(SELECT_VECTOR_EXACT.format(where=where), *arguments)
        return [(row[0], float(row[1])) for row in rows]

    async def _keyword_hits(self, query: str, filters: SearchFilters, k: int, addressee: str = "") -> Hits:
        guild_id, tuning = filters.guild_id, self.tuning
        counts = await self._counted(fts.query_words(query)[:tuning.keyword_max_terms], guild_id)
        matching = within_budget(counts, tuning.keyword_max_postings)
        if not matching:
            return []
        addressed = set(fts.query_words(addressee)).intersection(matching)
        authored = {word: 0 for word in addressed} | await self._count_matches(
            [word for word in matching if word not in addressed], guild_id, authors=True)
        # A word found at least as often in display names as in messages means a person: match their messages.
        names = {word for word in matching if 2 * authored[word] >= counts[word] > 0}
        await self._guild_stats.estimate_common(guild_id, counts, tuning.keyword_max_postings + 1)
        stats = await self._guild_stats.get(guild_id)
        weights = bm25.term_weights(counts, authored, names, stats.messages, tuning.author_weight)
        where, params = filter_clause(filters, first=bm25.KEYWORD_FIRST_FILTER)
        rows = await self._store.fetch(bm25.SELECT_KEYWORD.format(where=where), fts.tsquery(matching, names), k,
                                       *weights.arguments(tuning.body_weight, stats), *params)
        return [(row[0], float(row[1])) for row in rows]

    async def _counted(self, words: list[str], guild_id: int) -> dict[str, int]:
        """The query's words and the characters it searches alone (terms.characters_alone), each with its count
        of matching messages in the guild."""
        counts = await self._count_matches(words, guild_id)
        counts.update(await self._count_matches(characters_alone(counts), guild_id))
        return counts

    async def _count_matches(self, words: list[str], guild_id: int, authors: bool = False) -> dict[str, int]:
        """Each word's matching messages in the guild (with ``authors``, those whose author's name holds it),
        counted to just above the posting budget."""
        if not words:
            return {}
        queries = [fts.tsquery([word], words if authors else ()) for word in words]
        rows = await self._store.fetch(COUNT_MATCHES, guild_id, queries, self.tuning.keyword_max_postings + 1)
        return {word: row[0] for word, row in zip(words, rows)}

    async def _guild_names(self, guild_id: int) -> tuple[dict[int, str], dict[int, str]]:
        named = [AuthorSeen(*row) for row in await self._store.fetch(SELECT_AUTHOR_NAMES, guild_id)]
        channels = await self._store.fetch(SELECT_GUILD_CHANNELS, guild_id)
        return {author.author_id: author.name for author in authors_of(named)}, {row[0]: row[1] for row in channels}

    async def _people(self, guild_id: int, names: list[str]) -> set[str]:
        """As the SQLite engine's: a name each of whose words the guild holds at least as often as an author's name
        as anywhere (the keyword side's rule)."""
        words = {name: fts.query_words(name) for name in names}
        every = sorted({word for found in words.values() for word in found})
        counts = await self._count_matches(every, guild_id)
        authored = await self._count_matches(every, guild_id, authors=True)
        return {name for name, found in words.items()
                if found and all(2 * authored[word] >= counts[word] > 0 for word in found)}

    async def _recent_in_channel(self, guild_id: int, channel_id: int, limit: int) -> list[RecentMessage]:
        rows = await self._store.fetch(SELECT_RECENT_IN_CHANNEL, guild_id, channel_id, limit)
        return [RecentMessage(*tuple(row)) for row in reversed(rows)]

    async def context(self, message_ids: Sequence[int],
                      filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]:
        named = await self._store.fetch(SELECT_ROWIDS, filters.guild_id, list(message_ids))
        targets = [row[1] for row in named if row[1] is not None]
        replied = await self._store.fetch(SELECT_ROWIDS, filters.guild_id, targets) if targets else []
        sources = [row[0] for row in named]
        return await self._context_and_rows(sources, sources + [row[0] for row in replied], filters)

    async def _context_and_rows(self, sources: list[int], candidates: list[int],
                                filters: SearchFilters) -> tuple[Window, dict[int, CandidateRow]]:
        reply_window = self.tuning.reply_window
        select_neighbours = select_neighbour_ids(reply_window) + NEIGHBOURS_FROM
        window = window_of(await self._store.fetch(select_neighbours, filters.guild_id, sources), reply_window)
        where, params = filter_clause(filters, first=2)
        rows = await self._store.fetch(SELECT_CANDIDATES.format(where=where), rows_wanted(candidates, window), *params)
        return window, {row[0]: candidate_row(row) for row in rows}
