"""The keyword side of PostgreSQL search ranks as FTS5's bm25() does on SQLite: a word's weight is its IDF in the
guild, its frequency saturates, and a long message counts a hit for less."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cogs.memory.records import SearchFilters
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.postgres import bm25
from cogs.memory.store.postgres.search import PostgresSearchEngine
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.vectors.embedding import EmbeddingService
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import insert

GUILD = 1


async def keyword_search(store: PostgresStore, embedder: EmbeddingService, profile: MemoryProfile,
                         query: str) -> list[int]:
    hits = await PostgresSearchEngine(store, embedder, profile).search(query, SearchFilters(guild_id=GUILD), 10,
                                                                      mode="keyword")
    return [hit.message_id for hit in hits]


async def test_a_rare_words_match_outranks_a_common_words_match_however_often_the_common_one_repeats(
        pg_store: PostgresStore, embedder: EmbeddingService, core_profile: MemoryProfile,
        make_record: RecordFactory) -> None:
    # Each message alone in its channel, so none lends context to another and the ranking is the keyword side's.
    common = [make_record(i, "pizza tonight with everyone", channel_id=100 + i) for i in range(1, 40)]
    repeated = make_record(40, "pizza pizza pizza", channel_id=140)
    rare = make_record(41, "the zeppelin landed", channel_id=141)
    await insert(pg_store, *common, repeated, rare)
    assert (await keyword_search(pg_store, embedder, core_profile, "pizza zeppelin"))[:2] == [41, 40]


async def test_of_two_messages_holding_the_word_once_the_shorter_ranks_first(
        pg_store: PostgresStore, embedder: EmbeddingService, core_profile: MemoryProfile,
        make_record: RecordFactory) -> None:
    long = make_record(1, "we talked about the zeppelin and then about many other things all evening long",
                       channel_id=101)
    short = make_record(2, "zeppelin today", channel_id=102)
    others = [make_record(i, f"nothing to see here {i}", channel_id=100 + i) for i in range(3, 20)]
    await insert(pg_store, long, short, *others)
    assert await keyword_search(pg_store, embedder, core_profile, "zeppelin") == [2, 1]


async def test_a_name_matches_its_authors_messages_and_not_the_messages_that_mention_it(
        pg_store: PostgresStore, embedder: EmbeddingService, core_profile: MemoryProfile,
        make_record: RecordFactory) -> None:
    by_caroline = [make_record(i, f"back from the lake, day {i}", author_name="Caroline", channel_id=100 + i)
                   for i in range(1, 4)]
    mention = make_record(4, "caroline caroline, call me back", author_name="Mel", channel_id=104)
    await insert(pg_store, *by_caroline, mention)
    # Found more often as a display name than in messages, "caroline" means the person, as on SQLite.
    assert sorted(await keyword_search(pg_store, embedder, core_profile, "What did Caroline say?")) == [1, 2, 3]


async def test_searches_that_miss_a_guild_s_stats_together_read_them_once_and_again_once_stale(
        pg_store: PostgresStore, make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    await insert(pg_store, *(make_record(i, f"message number {i}", channel_id=100 + i) for i in range(1, 4)))
    fetch, reads, started, release = pg_store.fetch, [], asyncio.Event(), asyncio.Event()

    async def held_fetch(sql: str, *params: Any) -> Any:
        if sql == bm25.SELECT_GUILD_STATS:
            reads.append(params[0])
            started.set()
            await release.wait()
        return await fetch(sql, *params)

    monkeypatch.setattr(pg_store, "fetch", held_fetch)
    now = [0.0]
    stats = bm25.GuildStatsCache(pg_store, clock=lambda: now[0])
    lookups = [asyncio.create_task(stats.get(GUILD)) for _ in range(3)]
    await started.wait()
    release.set()
    assert [found.messages for found in await asyncio.gather(*lookups)] == [3, 3, 3]
    assert reads == [GUILD]
    now[0] += bm25.GUILD_STATS_TTL_S
    await stats.get(GUILD)
    assert reads == [GUILD, GUILD]
