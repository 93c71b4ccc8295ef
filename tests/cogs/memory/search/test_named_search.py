"""Questions that name people, channels and times, searched on both stores (search/named.py through FirstStage): the
boosts are soft and explained, a member's filter option stays hard, and names are read only within the question's
guild."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import Hit, SearchFilters
from cogs.memory.store.protocol import Store
from cogs.memory.store.rows import PlaceName
from tests.fixtures.core import T0, RecordFactory

GUILD, OTHER_GUILD = 1, 2
GENERAL, TRIPS, ELSEWHERE = 10, 11, 50
ALICE, BOB, SUNNY, MALLORY = 100, 200, 300, 900
DAY = 24 * 60  # minutes
ASKED = T0 + timedelta(days=1)  # "yesterday" is T0's day

# (message_id, channel, author_id, author_name, minute, content); minutes after T0, negative for earlier days.
MESSAGES = [
    (1, TRIPS, ALICE, "alice", -30 * DAY, "the ferry to the island leaves at 7am from pier 4, the ferry is slow"),
    (2, TRIPS, BOB, "bob", 10, "lunch was good, the noodles at the station"),
    (3, GENERAL, ALICE, "alice", 20, "pizza at the place on main street was great"),
    (4, GENERAL, BOB, "bob", 30, "pizza at the place on main street was great too"),
    (5, TRIPS, SUNNY, "sunny", -2 * DAY, "packing list for the lake: boots, rain jacket"),
    (6, TRIPS, SUNNY, "sunny", -3 * DAY, "my boots are finally dry"),
    *((10 + n, GENERAL, ALICE if n % 2 else BOB, "alice" if n % 2 else "bob", -DAY * (5 + n),
       f"it was sunny again, day {n} of the heatwave") for n in range(8)),
]


@pytest.fixture
async def engine(search_engine: Any, memory_store: Store, memory_ingest: IngestQueue,
                 make_record: RecordFactory) -> Any:
    for message_id, channel, author_id, author_name, minute, content in MESSAGES:
        await memory_ingest.add(make_record(message_id, content, guild_id=GUILD, channel_id=channel,
                                            author_id=author_id, author_name=author_name, minute=minute))
    # Another guild: a member and a channel guild 1's questions must never resolve.
    await memory_ingest.add(make_record(1001, "pizza at the place on main street", guild_id=OTHER_GUILD,
                                        channel_id=ELSEWHERE, author_id=MALLORY, author_name="mallory", minute=40))
    await memory_ingest.flush(vectors=True)
    await memory_store.write_place_names([PlaceName(GUILD, "channel", GENERAL, "general"),
                                          PlaceName(GUILD, "channel", TRIPS, "trips"),
                                          PlaceName(OTHER_GUILD, "channel", ELSEWHERE, "secret-plans")])
    return search_engine


def reasons(hit: Hit) -> list[str]:
    assert hit.parts is not None
    return [boost.reason for boost in hit.parts.boosts]


async def test_a_mentioned_author_ranks_first_among_equal_matches_and_the_boost_is_explained(engine: Any) -> None:
    hits = await engine.search(f"what did <@{BOB}> say about pizza", SearchFilters(guild_id=GUILD), 5,
                               asked_at=ASKED)
    assert hits[0].message_id == 4
    assert reasons(hits[0]) == ["author @bob named in the question"]
    assert hits[0].parts is not None and hits[0].parts.total == pytest.approx(hits[0].score)
    assert reasons(next(hit for hit in hits if hit.message_id == 3)) == []


async def test_a_named_channel_and_time_boost_what_answers_them(engine: Any) -> None:
    hits = await engine.search("pizza in #general yesterday", SearchFilters(guild_id=GUILD), 5, asked_at=ASKED)
    top = {hit.message_id: reasons(hit) for hit in hits[:2]}
    assert top == {mid: ["in #general, named in the question", "posted yesterday, as the question says"]
                   for mid in (3, 4)}


async def test_a_strong_match_outside_the_window_still_ranks_first(engine: Any) -> None:
    hits = await engine.search("when does the ferry to the island leave yesterday", SearchFilters(guild_id=GUILD),
                               5, asked_at=ASKED)
    assert hits[0].message_id == 1 and reasons(hits[0]) == []
    assert any("posted yesterday, as the question says" in reasons(hit) for hit in hits[1:])


async def test_a_members_filter_option_stays_hard_whoever_the_question_names(engine: Any) -> None:
    hits = await engine.search(f"what did <@{BOB}> say about pizza", SearchFilters(
        guild_id=GUILD, author_ids=frozenset({ALICE})), 10, asked_at=ASKED)
    assert hits and {hit.author_id for hit in hits} == {ALICE}
    window = await engine.search("pizza yesterday", SearchFilters(guild_id=GUILD, before=T0 - timedelta(days=1)),
                                 10, asked_at=ASKED)
    assert window and all(hit.created_at < T0 - timedelta(days=1) for hit in window)


async def test_another_guilds_members_and_channels_are_never_read(engine: Any) -> None:
    hits = await engine.search("what did @mallory say about pizza in #secret-plans", SearchFilters(guild_id=GUILD),
                               10, asked_at=ASKED)
    assert hits and all(hit.guild_id == GUILD and reasons(hit) == [] for hit in hits)
    members, channels = await engine._guild_names(GUILD)
    assert (members, channels) == ({ALICE: "alice", BOB: "bob", SUNNY: "sunny"}, {GENERAL: "general", TRIPS: "trips"})


async def test_a_name_the_messages_use_as_a_word_more_than_as_a_name_is_not_a_person(engine: Any) -> None:
    # "sunny" is in 8 messages and the name of an author of 2: a word. "alice" names only her.
    assert await engine._people(GUILD, ["sunny", "alice"]) == {"alice"}
    hits = await engine.search("was it sunny", SearchFilters(guild_id=GUILD), 10, asked_at=ASKED)
    assert all(reasons(hit) == [] for hit in hits)


async def test_a_plain_name_that_reads_as_a_person_boosts_their_messages(engine: Any) -> None:
    hits = await engine.search("what did alice say about pizza", SearchFilters(guild_id=GUILD), 5, asked_at=ASKED)
    assert hits[0].message_id == 3 and reasons(hits[0]) == ["author alice named in the question"]


async def test_a_message_that_says_nothing_gets_nothing_for_its_author_being_named(
        engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    # "lol" by Bob says nothing of what was asked of him (search/informative.py): no free ride on his name.
    for n in range(4):
        await memory_ingest.add(make_record(30 + n, "lol", guild_id=GUILD, channel_id=GENERAL, author_id=BOB,
                                            author_name="bob", minute=50 + n))
    await memory_ingest.flush(vectors=True)
    hits = await engine.search(f"what did <@{BOB}> say about pizza", SearchFilters(guild_id=GUILD), 30,
                               asked_at=ASKED)
    assert hits[0].message_id == 4 and reasons(hits[0]) == ["author @bob named in the question"]
    full = hits[0].parts.boosts[0].amount if hits[0].parts else 0.0
    said_nothing = [hit.parts for hit in hits if hit.content == "lol" and hit.parts]
    assert len(said_nothing) == 4 and all(parts.informativeness < 0.5 for parts in said_nothing), said_nothing
    # Each keeps the share of the boost its informativeness says (none when it says nothing at all).
    assert all(sum(boost.amount for boost in parts.boosts) == pytest.approx(parts.informativeness * full)
               for parts in said_nothing), said_nothing


async def test_the_name_a_question_is_put_to_adds_no_name_score_to_every_message_of_its_author(
        engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await memory_ingest.add(make_record(40, "alice: the last ferry back is at 5pm", guild_id=GUILD, channel_id=TRIPS,
                                        author_id=BOB, author_name="bob", minute=60))
    await memory_ingest.flush(vectors=True)
    question, everywhere = "alice, when is the ferry back?", SearchFilters(guild_id=GUILD)

    async def keyword_ranks() -> dict[int, Hit]:
        return {hit.message_id: hit for hit in await engine.search(question, everywhere, 30, mode="keyword",
                                                                   asked_at=ASKED)}

    put_to = await keyword_ranks()
    engine.tuning = dataclasses.replace(engine.tuning, read_address=False)
    read_as_a_name = await keyword_ranks()
    # Alice's pizza line holds no word of the question: still a candidate (she is the one asked), but her name adds
    # nothing to its keyword score, and Bob's line, which says the name and the ferry, ranks above it.
    pizza, said = put_to[3].parts, put_to[40].parts
    named_pizza = read_as_a_name[3].parts
    assert pizza is not None and said is not None and named_pizza is not None
    assert pizza.keyword is not None and named_pizza.keyword is not None and said.keyword is not None
    assert pizza.keyword < said.keyword and pizza.keyword < named_pizza.keyword
    # She is still the one the question is put to: her lines are boosted as hers.
    assert reasons(put_to[1]) == ["author alice named in the question"]
