"""BM25 over the messages' tsvectors, scored as FTS5's bm25() scores the SQLite side (store/sqlite/search.py).

ts_rank knows nothing of how many messages hold a word, so a common word lifted a row as much as a rare one. Here a
query word's IDF comes from its count of the guild's matching messages (the count the posting budget takes through
the GIN index anyway), a row's term frequency and length from its own document, and the guild's size and average
length from GuildStats, read at most once a minute per guild.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from ...search.terms import bm25_idf
from ...search.timed_cache import TimedCache
from . import fts
from .store import PostgresStore

__all__ = ("BM25_B", "BM25_K1", "GuildStats", "GuildStatsCache", "TermWeights", "term_weights")

log = logging.getLogger(__name__)

# FTS5's bm25() constants.
BM25_K1 = 1.2
BM25_B = 0.75
# How long a guild's size and average length are reused. Both only rank (the words within the budget decide what
# matches), and a minute's writes move them little; counting a guild of 1M messages on every search would not do.
GUILD_STATS_TTL_S = 60.0
# The guild's latest messages that the average length, and a common word's share, are taken over: read through the
# (guild_id, created_at) index, a bounded cost however large the guild.
SAMPLE_SIZE = 10_000
# A row's length is its words' positions: body (A) and author name (B) together, as FTS5's bm25() counts the whole
# row (every column) while it weighs only the body's hits (author_weight 0 in its call).
LENGTH = "(SELECT sum(cardinality(e.positions)) FROM unnest({document}) AS e)"
SELECT_GUILD_STATS = f"""
SELECT (SELECT count(*) FROM messages WHERE guild_id = $1),
       (SELECT avg({LENGTH.format(document="latest.document")}) FROM (
            SELECT m.document FROM messages AS m WHERE m.guild_id = $1 ORDER BY m.created_at DESC LIMIT $2
       ) AS latest)
"""
# How many of the guild's latest messages each word matches: a word over the posting budget was counted only to the
# cap, and its IDF is estimated from its share of this sample instead.
COUNT_SAMPLE_MATCHES = """
SELECT (
    SELECT count(*) FROM (
        SELECT m.document FROM messages AS m WHERE m.guild_id = $1 ORDER BY m.created_at DESC LIMIT $3
    ) AS latest WHERE latest.document @@ to_tsquery('simple', w.q)
) FROM unnest($2::text[]) WITH ORDINALITY AS w(q, position) ORDER BY w.position
"""
# ``$1`` (the words within the budget, a person's name as the author's) decides which rows match; every query word
# ($3, a lone CJK character a prefix: $4) ranks them: FTS5's IDF x saturated body frequency x length normalisation
# ($5: the IDFs, $7: body_weight, $8: the guild's average length), plus $6 where the author's name holds the word.
# The rows only a name matches tie, and the latest come first, as on SQLite.
SELECT_KEYWORD = f"""
WITH hits AS (
    SELECT m.id, m.created_at, length.positions, t.idf, t.bonus,
           $7::float8 * sum(cardinality(array_positions(d.weights, 'A'))) AS frequency,
           bool_or('B' = ANY(d.weights)) AS authored
    FROM messages AS m
         CROSS JOIN to_tsquery('simple', $1) AS q
         CROSS JOIN LATERAL (SELECT {LENGTH.format(document="m.document")} AS positions) AS length
         CROSS JOIN LATERAL unnest(m.document) AS d
         JOIN unnest($3::text[], $4::boolean[], $5::float8[], $6::float8[]) AS t(word, prefix, idf, bonus)
           ON d.lexeme = t.word OR (t.prefix AND starts_with(d.lexeme, t.word))
    WHERE m.document @@ q AND {{where}}
    GROUP BY m.id, m.created_at, length.positions, t.word, t.idf, t.bonus
)
SELECT id, sum(
    idf * frequency * ($9::float8 + 1) / (frequency + $9 * (1 - $10::float8 + $10 * positions / $8::float8))
    + CASE WHEN authored THEN bonus ELSE 0 END
) AS rank
FROM hits GROUP BY id, created_at
ORDER BY rank DESC, created_at DESC, id DESC LIMIT $2
"""
KEYWORD_FIRST_FILTER = 11


@dataclass(frozen=True, slots=True)
class GuildStats:
    """A guild's message count, and the average positions of its latest messages' documents."""

    messages: int
    average_length: float


@dataclass(frozen=True, slots=True)
class TermWeights:
    """Each query word's weight in SELECT_KEYWORD: its IDF on body hits (0 for a name, which ranks only through its
    author's messages) and what a row gains where its author's name holds the word."""

    words: list[str]
    prefixes: list[bool]
    idfs: list[float]
    bonuses: list[float]

    def arguments(self, body_weight: float, stats: GuildStats) -> tuple[object, ...]:
        """SELECT_KEYWORD's $3 to $10."""
        average = max(stats.average_length, 1.0)
        return self.words, self.prefixes, self.idfs, self.bonuses, body_weight, average, BM25_K1, BM25_B


def term_weights(counts: Mapping[str, int], authored: Mapping[str, int], names: Collection[str], rows: int,
                 author_weight: float) -> TermWeights:
    """The weights of the query's ``counts`` words (each one's matching rows), over a guild of ``rows`` messages.

    ``authored`` counts the rows whose author's name holds each word within the budget; ``names`` are those matched
    as names only. As the SQLite side: each name match adds its IDF (over the authored rows) times author_weight.
    """
    words = list(counts)
    return TermWeights(
        words=words,
        prefixes=[fts.is_prefix(word) for word in words],
        idfs=[0.0 if word in names else bm25_idf(rows, counts[word]) for word in words],
        bonuses=[author_weight * bm25_idf(rows, authored[word]) if authored.get(word) else 0.0 for word in words],
    )


class GuildStatsCache:
    """Each guild's GuildStats, read again once GUILD_STATS_TTL_S has passed; searches that miss together share one
    read (search/timed_cache.py). Owned by one search engine, on the event loop."""

    def __init__(self, store: PostgresStore, ttl_s: float = GUILD_STATS_TTL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._store = store
        self._read: TimedCache[int, GuildStats] = TimedCache(ttl_s, clock=clock)

    async def get(self, guild_id: int) -> GuildStats:
        return await self._read.get(guild_id, lambda: self._select(guild_id))

    async def _select(self, guild_id: int) -> GuildStats:
        [row] = await self._store.fetch(SELECT_GUILD_STATS, guild_id, SAMPLE_SIZE)
        stats = GuildStats(row[0], float(row[1] or 0.0))
        log.debug("Guild %d: %d messages, %.1f positions on average", guild_id, stats.messages, stats.average_length)
        return stats

    async def estimate_common(self, guild_id: int, counts: dict[str, int], cap: int) -> None:
        """Replace each count at ``cap`` (a word counted only to the cap) by its share of the guild's latest
        SAMPLE_SIZE messages times the guild's size, never below the cap."""
        common = [word for word, count in counts.items() if count >= cap]
        if not common:
            return
        stats = await self.get(guild_id)
        rows = await self._store.fetch(COUNT_SAMPLE_MATCHES, guild_id, [fts.tsquery([word]) for word in common],
                                       SAMPLE_SIZE)
        sampled = min(stats.messages, SAMPLE_SIZE)
        for word, row in zip(common, rows):
            if sampled:
                counts[word] = max(cap, round(row[0] * stats.messages / sampled))
