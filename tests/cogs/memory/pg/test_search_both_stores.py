"""The search behaviours that must not depend on the store: run against SQLite (FAISS + FTS5) and PostgreSQL
(pgvector + full-text search), fed by the same real IngestQueue and MiniLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cogs.memory.embedding import EmbeddingService
from cogs.memory.ingest import IngestQueue
from cogs.memory.pg.indexes import DatabaseIndexes
from cogs.memory.pg.search import PostgresSearchEngine
from cogs.memory.pg.store import PostgresStore
from cogs.memory.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from cogs.memory.search import SearchEngine
from cogs.memory.store import MemoryStore
from cogs.memory.vector_index import IndexRegistry
from tests.fixtures.core import T0, RecordFactory
from tests.fixtures.postgres import fresh_database

GUILD = 1
OTHER_GUILD = 2
GENERAL, RANDOM, SECRET = 10, 11, 12
ALICE, BOB = 100, 200

# (message_id, channel, author_id, author_name, content); message ids double as minutes after T0.
CONVERSATION = [
    (1, GENERAL, ALICE, "alice", "Anyone up for pizza tonight?"),
    (2, GENERAL, BOB, "bob", "Sure, the place on Main Street at 8"),
    (3, GENERAL, ALICE, "alice", "My cat knocked the plant off the shelf again"),
    (4, RANDOM, BOB, "bob", "I am training for a marathon in October"),
    (5, RANDOM, ALICE, "alice", "The new deploy broke the login page, rolling back"),
    (6, SECRET, BOB, "bob", "The launch date is the 14th, keep it quiet"),
    (7, GENERAL, BOB, "bob", "我喜欢吃北京烤鸭"),
    (8, GENERAL, ALICE, "alice", "来週、東京タワーに行きます"),
    (9, RANDOM, BOB, "bob", "Alice said the pizza was great"),
]


@pytest.fixture(params=["sqlite", "postgresql"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path, embedder: EmbeddingService,
                  core_profile: MemoryProfile) -> AsyncIterator[tuple[Any, IngestQueue]]:
    """(search engine, ingest queue) over one store kind; the PostgreSQL one skips only without pgserver."""
    if request.param == "sqlite":
        store: Any = await MemoryStore.open(tmp_path / "memory.sqlite3")
        indexes: Any = IndexRegistry(store, tmp_path / "indexes", embedder.model_name, embedder.dimension)
        await indexes.load_all()
        engine: Any = SearchEngine(store, embedder, indexes, core_profile)
    else:
        store = await PostgresStore.open(await fresh_database(request.getfixturevalue("postgres_server_url")))
        indexes = DatabaseIndexes(embedder.model_name, embedder.dimension)
        engine = PostgresSearchEngine(store, embedder, core_profile)
    ingest = IngestQueue(store, embedder, indexes, batch_size=8, queue_size=64)
    ingest.start()
    yield engine, ingest
    await ingest.close()
    await indexes.close()
    await store.close()


@pytest.fixture
async def engine(backend: tuple[Any, IngestQueue], make_record: RecordFactory) -> Any:
    engine, ingest = backend
    for message_id, channel, author_id, author_name, content in CONVERSATION:
        await ingest.add(make_record(message_id, content, guild_id=GUILD, channel_id=channel, author_id=author_id,
                                     author_name=author_name))
    # The same words in another guild: must never leak into guild 1's results.
    await ingest.add(make_record(1001, "Anyone up for pizza tonight?", guild_id=OTHER_GUILD, channel_id=50))
    await ingest.flush()
    return engine


def ids(results: list[dict]) -> list[int]:
    return [hit["message_id"] for hit in results]


async def test_hybrid_ranks_the_exact_match_first(engine: Any) -> None:
    results = await engine.search("pizza tonight", SearchFilters(guild_id=GUILD), 5)
    assert ids(results)[0] == 1


async def test_vector_side_finds_a_paraphrase_with_no_shared_word(engine: Any) -> None:
    results = await engine.search("running a long race", SearchFilters(guild_id=GUILD), 3, mode="vector")
    assert ids(results)[0] == 4


async def test_results_carry_the_candidate_fields(engine: Any) -> None:
    hit = (await engine.search("pizza tonight", SearchFilters(guild_id=GUILD), 1))[0]
    assert hit == {
        "message_id": 1, "guild_id": GUILD, "channel_id": GENERAL, "author_id": ALICE, "author_name": "alice",
        "content": "Anyone up for pizza tonight?", "created_at": (T0 + timedelta(minutes=1)).isoformat(),
        "score": hit["score"], "sources": ["vector", "keyword"], "rank": 1,
    }


async def test_keyword_mode_returns_only_keyword_matches_and_their_neighbours(engine: Any) -> None:
    results = await engine.search("marathon", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    assert ids(results)[0] == 4
    assert all(hit["sources"] in (["keyword"], ["context"]) for hit in results)


async def test_a_stemmed_word_matches_its_other_forms(engine: Any) -> None:
    results = await engine.search("trained", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(results)[0] == 4


async def test_another_guilds_messages_never_appear(engine: Any) -> None:
    for mode in ("hybrid", "vector", "keyword"):
        results = await engine.search("pizza tonight", SearchFilters(guild_id=GUILD), 20, mode=mode)
        assert results and all(hit["guild_id"] == GUILD for hit in results) and 1001 not in ids(results)


async def test_a_guild_with_no_messages_returns_nothing(engine: Any) -> None:
    assert await engine.search("pizza", SearchFilters(guild_id=999), 5) == []


async def test_channel_filter(engine: Any) -> None:
    results = await engine.search("pizza", SearchFilters(guild_id=GUILD, channel_ids=frozenset({RANDOM})), 10)
    assert ids(results)[0] == 9 and {hit["channel_id"] for hit in results} == {RANDOM}


async def test_author_filter(engine: Any) -> None:
    results = await engine.search("pizza", SearchFilters(guild_id=GUILD, author_ids=frozenset({BOB})), 10)
    assert ids(results)[0] == 9 and {hit["author_id"] for hit in results} == {BOB}


async def test_time_range_filter(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, after=T0 + timedelta(minutes=3.5), before=T0 + timedelta(minutes=8.5))
    results = await engine.search("pizza", filters, 10)
    assert set(ids(results)) <= {4, 5, 6, 7, 8} and results


async def test_permission_filter_hides_channels_the_caller_cannot_read(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({GENERAL, RANDOM}))
    results = await engine.search("when is the launch date", filters, 10)
    assert 6 not in ids(results) and {hit["channel_id"] for hit in results} == {GENERAL, RANDOM}


async def test_permission_filter_allows_what_it_names(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({SECRET}))
    assert ids(await engine.search("when is the launch date", filters, 10)) == [6]


async def test_excluded_messages_are_left_out(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, exclude_message_ids=frozenset({1}))
    results = await engine.search("pizza tonight", filters, 10)
    assert 1 not in ids(results) and results


@pytest.mark.parametrize("query", ['"pizza', "pizza AND NOT", "pizza & !", "pizza:*", "(pizza", "pizza | ",
                                   "'pizza'", "pizza <-> tonight"])
async def test_query_syntax_is_searched_as_words(engine: Any, query: str) -> None:
    results = await engine.search(query, SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert 1 in ids(results)


async def test_chinese_keyword_search(engine: Any) -> None:
    results = await engine.search("北京烤鸭", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(results)[0] == 7


async def test_japanese_keyword_search(engine: Any) -> None:
    results = await engine.search("東京タワー", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(results)[0] == 8


async def test_a_hit_lends_context_to_the_reply_after_it(engine: Any) -> None:
    # Message 2 answers message 1 without repeating its words.
    results = await engine.search("pizza tonight", SearchFilters(guild_id=GUILD, channel_ids=frozenset({GENERAL})),
                                  10, mode="keyword")
    reply = next(hit for hit in results if hit["message_id"] == 2)
    assert reply["sources"] == ["context"]


async def test_a_deleted_message_is_never_found(backend: tuple[Any, IngestQueue], engine: Any) -> None:
    _, ingest = backend
    await ingest.delete([6])
    for mode in ("hybrid", "vector", "keyword"):
        results = await engine.search("when is the launch date", SearchFilters(guild_id=GUILD), 10, mode=mode)
        assert 6 not in ids(results)


async def test_an_edit_is_found_by_its_new_words_only(backend: tuple[Any, IngestQueue], engine: Any) -> None:
    _, ingest = backend
    await ingest.edit(3, "My dog chewed the sofa", None)
    new = await engine.search("sofa", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    old = await engine.search("shelf", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(new)[0] == 3 and 3 not in ids(old)
