"""First-stage search over both stores, fed by the same real IngestQueue and MiniLM: SQLite (FAISS + FTS5) and
PostgreSQL (pgvector + full-text search). Ranking, filters, isolation, odd queries, deletes and edits; tests that
ask for ``sqlite_engine`` or ``store`` are about the SQLite side's own machinery. The pieces it runs are tested
beside their modules: test_fusion.py, test_context.py, test_loans.py, test_terms.py."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import Hit, SearchFilters
from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from cogs.memory.runtime.profile import MemoryProfile
from tests.fixtures.core import T0, RecordFactory

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


async def remember_conversation(ingest: IngestQueue, make_record: RecordFactory) -> None:
    for message_id, channel, author_id, author_name, content in CONVERSATION:
        await ingest.add(make_record(message_id, content, guild_id=GUILD, channel_id=channel, author_id=author_id,
                                     author_name=author_name))
    # The same words in another guild: must never leak into guild 1's results.
    await ingest.add(make_record(1001, "Anyone up for pizza tonight?", guild_id=OTHER_GUILD, channel_id=50))
    await ingest.flush(vectors=True)


@pytest.fixture
async def engine(search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> Any:
    """The conversation on one store kind or the other: each test that asks for it runs on both."""
    await remember_conversation(memory_ingest, make_record)
    return search_engine


@pytest.fixture
async def sqlite_engine(store: SqliteStore, embedder: EmbeddingService, indexes: IndexRegistry, ingest: IngestQueue,
                        make_record: RecordFactory, core_profile: MemoryProfile) -> SqliteSearchEngine:
    """The conversation on SQLite alone, for what only its engine does (FAISS fallbacks, FTS5 posting budgets)."""
    await remember_conversation(ingest, make_record)
    return SqliteSearchEngine(store, embedder, indexes, core_profile)


def ids(results: list[dict]) -> list[int]:
    return [hit.message_id for hit in results]


async def test_hybrid_ranks_the_exact_match_first(engine: Any) -> None:
    results = await engine.search("pizza tonight", SearchFilters(guild_id=GUILD), 5)
    assert ids(results)[0] == 1


async def test_vector_side_finds_a_paraphrase_with_no_shared_word(engine: Any) -> None:
    results = await engine.search("running a long race", SearchFilters(guild_id=GUILD), 3, mode="vector")
    assert ids(results)[0] == 4


async def test_the_vector_side_reads_full_width_letters_as_the_letters_people_type(engine: Any) -> None:
    typed = await engine.search("running a long race", SearchFilters(guild_id=GUILD), 3, mode="vector")
    full_width = await engine.search("ｒｕｎｎｉｎｇ ａ ｌｏｎｇ ｒａｃｅ", SearchFilters(guild_id=GUILD), 3, mode="vector")
    assert full_width == typed


async def test_results_carry_the_candidate_fields(engine: Any) -> None:
    hit = (await engine.search("pizza tonight", SearchFilters(guild_id=GUILD), 1))[0]
    assert hit == Hit(
        message_id=1, guild_id=GUILD, channel_id=GENERAL, author_id=ALICE, author_name="alice",
        content="Anyone up for pizza tonight?", created_at=T0 + timedelta(minutes=1),
        score=hit.score, sources=("vector", "keyword"), rank=1, parts=hit.parts,
    )
    assert hit.created_at.utcoffset() == timedelta(0)
    # Both sides found it, and what its score is made of adds up to it.
    assert hit.parts.keyword is not None and hit.parts.vector is not None
    assert hit.parts.total == pytest.approx(hit.score, abs=1e-9)


async def test_ranks_are_consecutive_and_scores_descend(engine: Any) -> None:
    results = await engine.search("pizza", SearchFilters(guild_id=GUILD), 5)
    assert [hit.rank for hit in results] == list(range(1, len(results) + 1))
    assert [hit.score for hit in results] == sorted((hit.score for hit in results), reverse=True)


async def test_keyword_mode_returns_only_keyword_matches_and_their_neighbours(engine: Any) -> None:
    results = await engine.search("marathon", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    assert ids(results)[0] == 4
    assert all(hit.sources in (("keyword",), ("context",)) for hit in results)


async def test_a_blank_query_returns_nothing(engine: Any) -> None:
    assert await engine.search("   ", SearchFilters(guild_id=GUILD), 5) == []


async def test_a_limit_below_one_is_refused_not_sliced_by(engine: Any) -> None:
    with pytest.raises(ValueError, match="^limit must be a whole number of at least 1, not -5$"):
        await engine.search("pizza", SearchFilters(guild_id=GUILD), -5)


async def test_another_guilds_messages_never_appear(engine: Any) -> None:
    for mode in ("hybrid", "vector", "keyword"):
        results = await engine.search("pizza tonight", SearchFilters(guild_id=GUILD), 20, mode=mode)
        assert results and all(hit.guild_id == GUILD for hit in results) and 1001 not in ids(results)


async def test_a_guild_with_no_messages_returns_nothing(engine: Any) -> None:
    assert await engine.search("pizza", SearchFilters(guild_id=999), 5) == []


async def test_channel_filter(engine: Any) -> None:
    results = await engine.search("pizza", SearchFilters(guild_id=GUILD, channel_ids=frozenset({RANDOM})), 10)
    assert ids(results)[0] == 9 and {hit.channel_id for hit in results} == {RANDOM}


async def test_author_filter(engine: Any) -> None:
    results = await engine.search("pizza", SearchFilters(guild_id=GUILD, author_ids=frozenset({BOB})), 10)
    assert ids(results)[0] == 9 and {hit.author_id for hit in results} == {BOB}


async def test_time_range_filter(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, after=T0 + timedelta(minutes=3.5), before=T0 + timedelta(minutes=8.5))
    results = await engine.search("pizza", filters, 10)
    assert set(ids(results)) <= {4, 5, 6, 7, 8} and results


async def test_permission_filter_hides_channels_the_caller_cannot_read(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({GENERAL, RANDOM}))
    results = await engine.search("when is the launch date", filters, 10)
    assert 6 not in ids(results) and {hit.channel_id for hit in results} == {GENERAL, RANDOM}


async def test_permission_filter_allows_what_it_names(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({SECRET}))
    assert ids(await engine.search("when is the launch date", filters, 10)) == [6]


async def test_excluded_messages_are_left_out(engine: Any) -> None:
    filters = SearchFilters(guild_id=GUILD, exclude_message_ids=frozenset({1}))
    results = await engine.search("pizza tonight", filters, 10)
    assert 1 not in ids(results) and results


# FTS5's syntax, then PostgreSQL tsquery's: neither store may read either as operators.
@pytest.mark.parametrize("query", ['"pizza', "pizza AND NOT", "NEAR(pizza, 2)", "body:pizza", "pizza*", "(pizza",
                                   "^pizza", "{body}: pizza OR", "pizza & !", "pizza:*", "pizza | ", "'pizza'",
                                   "pizza <-> tonight"])
async def test_query_syntax_is_searched_as_words(engine: Any, query: str) -> None:
    results = await engine.search(query, SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert 1 in ids(results)  # "pizza" is still searched for; nothing raised


async def test_a_field_name_in_a_query_is_searched_as_a_word(engine: Any) -> None:
    results = await engine.search("author: bob", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert results  # "bob" is still searched for; nothing raised


async def test_not_in_a_query_does_not_exclude(engine: Any) -> None:
    results = await engine.search("NOT pizza", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert {1, 9} <= set(ids(results))


async def test_a_stemmed_word_matches_its_other_forms(engine: Any) -> None:
    results = await engine.search("trained", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(results)[0] == 4


async def test_chinese_keyword_search(engine: Any) -> None:
    results = await engine.search("北京烤鸭", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(results)[0] == 7


async def test_japanese_keyword_search(engine: Any) -> None:
    results = await engine.search("東京タワー", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(results)[0] == 8


async def test_a_display_name_in_the_query_matches_that_authors_messages(engine: Any) -> None:
    # Message 9 only mentions Alice; her own messages are what "what did alice say" asks for.
    results = await engine.search("alice pizza", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    assert ids(results)[0] == 1


async def test_a_name_match_scores_each_of_that_authors_messages_alike(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # A name says whose message, not which one: Daniel's long message must not rank below his short ones. Each
    # message has a channel to itself, so no neighbour lends to another and the score is the keyword side's own.
    guild = 6
    daniel = ["Noted.", "Where's the wedding?", "Saturday works for me, I'm home after 3 pm",
              "I started at Ridgeway Cycles two weeks ago, fixing bikes all day, and the owner lets me test-ride"]
    for message_id, content in enumerate(daniel, start=1):
        await memory_ingest.add(make_record(message_id, content, guild_id=guild, channel_id=60 + message_id,
                                            author_id=ALICE, author_name="Daniel"))
    for message_id in range(10, 16):
        await memory_ingest.add(make_record(message_id, f"my cat knocked plant number {message_id} off the shelf",
                                            guild_id=guild, channel_id=70 + message_id, author_id=BOB,
                                            author_name="Mei"))
    await memory_ingest.flush(vectors=True)
    named = await search_engine.search("what did daniel say", SearchFilters(guild_id=guild), 10, mode="keyword")
    assert sorted(ids(named)) == [1, 2, 3, 4]
    assert len({round(hit.score, 9) for hit in named}) == 1, named
    # Tied, the latest comes first (message ids double as minutes), as the keyword side orders its ties.
    assert ids(named) == [4, 3, 2, 1]
    # A word of the message on top of the name ranks it first; the others still tie below it.
    bikes = await search_engine.search("daniel bikes", SearchFilters(guild_id=guild), 10, mode="keyword")
    assert ids(bikes)[0] == 4 and len({round(hit.score, 9) for hit in bikes[1:]}) == 1, bikes


async def test_an_over_common_term_does_not_widen_the_match(engine: Any) -> None:
    # "marathon" (1 message) fits the budget, "pizza" (3 documents) does not: only the marathon message matches.
    engine.tuning = RankingTuning(keyword_max_postings=2)
    results = await engine.search("pizza marathon", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    assert [hit.message_id for hit in results if "keyword" in hit.sources] == [4]


async def test_an_over_common_term_still_ranks_what_the_rare_ones_match(
        engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # Longer than message 4, so on "marathon" alone it would rank below it; "pizza" lifts it.
    await memory_ingest.add(make_record(20, "the marathon route passes right by that pizza place on the corner near "
                                            "the old train station", guild_id=GUILD, channel_id=RANDOM,
                                        author_id=BOB, author_name="bob"))
    await memory_ingest.flush(vectors=True)
    engine.tuning = RankingTuning(keyword_max_postings=2)
    results = await engine.search("pizza marathon", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    assert [hit.message_id for hit in results if "keyword" in hit.sources] == [20, 4]


async def test_a_hit_lends_context_to_the_reply_after_it(engine: Any) -> None:
    # Message 2 answers message 1 without repeating its words.
    results = await engine.search("pizza tonight", SearchFilters(guild_id=GUILD, channel_ids=frozenset({GENERAL})),
                                  10, mode="keyword")
    reply = next(hit for hit in results if hit.message_id == 2)
    assert reply.sources == ("context",)


async def test_a_chinese_word_said_differently_is_found_by_its_characters(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # "报名" (sign up) is written nowhere; "报了" (signed up) is.
    guild = 5
    messages = [(1, 51, "我报了六月的半程马拉松"), (2, 51, "今天天气很好"), (3, 51, "周末去爬山吧")]
    for message_id, channel, content in messages:
        await memory_ingest.add(make_record(message_id, content, guild_id=guild, channel_id=channel))
    await memory_ingest.flush(vectors=True)
    results = ids(await search_engine.search("他报名了吗", SearchFilters(guild_id=guild), 10, mode="keyword"))
    assert results[:1] == [1], results


async def test_the_reply_to_a_question_that_follows_a_hit_is_found(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # The question names nothing the query names; it asks about what the message before it said.
    guild = 4
    messages = [(1, 41, "take your amp to Hank at Loud Repairs"), (2, 41, "is he expensive"),
                (3, 41, "he did mine for 80"),
                (4, 42, "Loud Repairs was closed all week"), (5, 42, "nice"), (6, 42, "he did mine for 80"),
                *((10 + i, 43, f"the amp buzzes again, day {i} of the tour, somebody help me") for i in range(6))]
    for message_id, channel, content in messages:  # two people taking turns: the channels are dialogues
        await memory_ingest.add(make_record(message_id, content, guild_id=guild, channel_id=channel,
                                            author_id=500 + message_id % 2))
    await memory_ingest.flush(vectors=True)
    results = ids(await search_engine.search("amp Hank Loud Repairs", SearchFilters(guild_id=guild), 20,
                                             mode="keyword"))
    assert 3 in results and 6 not in results, results


async def test_the_reply_to_a_matching_question_outranks_the_reply_to_a_matching_remark(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # The remark matches the query better (shorter) than the question, yet only the question's reply answers it.
    guild = 3
    messages = [(1, 31, "anyone up for pizza tonight with the whole team?"), (2, 31, "sure, Main Street at 8"),
                (3, 32, "pizza tonight! pizza"), (4, 32, "sure, Main Street at 8"),
                (5, 33, "I could eat pizza every single day of the week and never get bored of it, honestly"),
                (6, 33, "my brother makes a frozen pizza on sundays when the weather is too bad to go out"),
                (7, 33, "the pizza place by the station closed down last month after twenty years there")]
    for message_id, channel, content in messages:  # two people taking turns: the channels are dialogues
        await memory_ingest.add(make_record(message_id, content, guild_id=guild, channel_id=channel,
                                            author_id=500 + message_id % 2))
    await memory_ingest.flush(vectors=True)
    results = ids(await search_engine.search("pizza tonight", SearchFilters(guild_id=guild), 10, mode="keyword"))
    assert results.index(2) < results.index(4), results


async def test_the_reply_of_the_one_asked_is_found_past_someone_elses_line(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # Sam asks Jo; Kat's line about something else comes before Jo's answer.
    guild = 7
    people = {"jo": 301, "sam": 302, "kat": 303, "ravi": 304}
    messages = [(1, "jo", "new phone day!!"), (2, "sam", "which one"), (3, "kat", "rivera plumbing any good sam?"),
                (4, "jo", "the Pixel 8, the green one"), (5, "ravi", "nice"),
                *((10 + i, "ravi", f"my phone battery died again on day {i} of the trip, so annoying")
                  for i in range(4))]
    for message_id, name, content in messages:
        await memory_ingest.add(make_record(message_id, content, guild_id=guild, author_id=people[name],
                                            channel_id=71 if message_id < 10 else 72, author_name=name))
    await memory_ingest.flush(vectors=True)
    results = await search_engine.search("new phone", SearchFilters(guild_id=guild), 20, mode="keyword")
    assert [hit.sources for hit in results if hit.message_id == 4] == [("context",)], results


async def test_a_discord_reply_to_a_question_is_found_however_far_below_it(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # Ben answers Jo's question through Discord's reply, five lines of another talk below it.
    guild = 8
    messages = [(1, "jo", "anyone know a good plumber near the harbour?"), (2, "sam", "no idea sorry"),
                (3, "kat", "did anyone see the match last night"), (4, "ravi", "yes what a game"),
                (5, "kat", "that last goal though"), (6, "ravi", "unreal"),
                (7, "ben", "Rivera does great work, they fixed my sink in an hour")]
    for message_id, name, content in messages:
        record = make_record(message_id, content, guild_id=guild, channel_id=81, author_name=name,
                             author_id=400 + message_id)
        await memory_ingest.add(replace(record, reply_to_id=1) if message_id == 7 else record)
    await memory_ingest.flush(vectors=True)
    results = await search_engine.search("good plumber near the harbour", SearchFilters(guild_id=guild), 10,
                                         mode="keyword")
    assert [hit.sources for hit in results if hit.message_id == 7] == [("context",)], results


async def test_a_narrow_filter_falls_back_to_a_restricted_vector_search(
        sqlite_engine: SqliteSearchEngine) -> None:
    # Two unrestricted hits hold nothing from #secret, so the index is searched again over #secret's rows only.
    sqlite_engine.tuning = RankingTuning(vector_overfetch=1)
    sqlite_engine.vector_candidates = 2
    filters = SearchFilters(guild_id=GUILD, channel_ids=frozenset({SECRET}))
    results = await sqlite_engine.search("pizza tonight", filters, 1, mode="vector")
    assert ids(results) == [6]


async def test_a_deleted_message_is_never_found(engine: Any, memory_ingest: IngestQueue) -> None:
    await memory_ingest.delete([6])
    for mode in ("hybrid", "vector", "keyword"):
        results = await engine.search("when is the launch date", SearchFilters(guild_id=GUILD), 10, mode=mode)
        assert 6 not in ids(results)


async def test_an_edit_is_found_by_its_new_words_only(engine: Any, memory_ingest: IngestQueue) -> None:
    await memory_ingest.edit(3, "My dog chewed the sofa", None)
    new = await engine.search("sofa", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    old = await engine.search("shelf", SearchFilters(guild_id=GUILD), 5, mode="keyword")
    assert ids(new)[0] == 3 and 3 not in ids(old)
