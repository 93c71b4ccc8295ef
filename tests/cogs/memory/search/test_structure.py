"""search/structure.py: a channel's dialogue, read from who wrote each message, and what the first stage lends by it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.store.protocol import Store
from cogs.memory.search.context import Neighbour
from cogs.memory.search.first_stage import RecentMessage
from cogs.memory.search.loans import spread_with_loans
from cogs.memory.search.structure import Posted, dialogue, measure, strength
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import insert

ANN, BEN, CAL, DEV, EVE = 1, 2, 3, 4, 5


def channel(authors: list[int], asking: set[int] = frozenset(), replies: dict[int, int] | None = None) -> list[Posted]:
    """Messages 1, 2, ... by ``authors`` in order; those in ``asking`` ask; ``replies``: message -> what it replies."""
    return [Posted(i, author, (replies or {}).get(i), i in asking) for i, author in enumerate(authors, start=1)]


def test_two_people_taking_turns_are_a_dialogue() -> None:
    # Ann asks, Ben answers, and so on: the author changes at every message, where chance would change it half the time.
    figures = measure([channel([ANN, BEN] * 20, asking=set(range(1, 41, 2)))])
    assert (figures.turn_taking, figures.chance_turn_taking, figures.dialogue) == (1.0, 0.5, 1.0)
    assert (figures.questions, figures.question_other_next) == (0.5, 1.0)


def test_a_bursty_group_is_no_dialogue() -> None:
    # Five people, each writing two or three lines in a row: the author changes less often than at random.
    bursts = [ANN, ANN, BEN, BEN, BEN, CAL, CAL, DEV, DEV, EVE, EVE, EVE] * 4
    figures = measure([channel(bursts)])
    assert figures.turn_taking < figures.chance_turn_taking
    assert figures.dialogue == 0.0
    assert figures.mean_burst == pytest.approx(2.4)


def test_a_group_whose_authors_change_only_as_often_as_chance_is_no_dialogue() -> None:
    # Three people in a fixed rotation change author at every line, as two taking turns do; but three authors at
    # random would change two times in three, so the lift over chance is what counts, not the rate alone.
    assert dialogue(turn_taking=2 / 3, chance=2 / 3) == 0.0
    assert dialogue(turn_taking=1.0, chance=2 / 3) == 1.0
    assert dialogue(turn_taking=0.875, chance=0.75) == pytest.approx(0.5)  # four people: half-way above chance


def test_two_people_writing_in_bursts_are_a_dialogue() -> None:
    # Ann writes three lines, then Ben three: turn-taking 1/3 is below chance (1/2), but with two people every change
    # of author is one answering the other.
    figures = measure([channel([ANN, ANN, ANN, BEN, BEN, BEN] * 10)])
    assert figures.turn_taking < figures.chance_turn_taking == 0.5
    assert figures.dialogue == 1.0
    # One of the two writing most of it is still two people, less clearly: 1 / (0.8² + 0.2²) = 1.47 authors.
    assert measure([channel(([ANN] * 4 + [BEN]) * 10)]).dialogue == pytest.approx(1.0 - abs(1 / 0.68 - 2), abs=1e-3)
    # A third person as active makes a group again: only turn-taking above chance makes it a dialogue.
    assert measure([channel([ANN, ANN, BEN, BEN, CAL, CAL] * 10)]).dialogue == 0.0


def test_the_rules_keep_their_full_weight_from_half_a_dialogue_up() -> None:
    assert [strength(d, 0.5) for d in (0.0, 0.16, 0.5, 0.9)] == [0.0, 0.32, 1.0, 1.0]
    assert strength(0.0, 0.0) == 1.0  # a profile that sets full_at = 0 lends in full everywhere


def test_one_author_alone_and_an_empty_channel_are_no_dialogue() -> None:
    assert measure([channel([ANN] * 5)]).dialogue == 0.0
    assert measure([]).messages == 0 and measure([[]]).dialogue == 0.0


def test_channels_pool_each_read_in_its_own_order() -> None:
    # Ann then Ben in one channel, Ben then Ann in the other: no follower crosses from one channel to the other.
    figures = measure([channel([ANN, BEN]), channel([BEN, ANN])])
    assert (figures.messages, figures.authors, figures.turn_taking) == (4, 2, 1.0)


def test_replies_and_their_distance() -> None:
    figures = measure([channel([ANN, BEN, CAL, BEN], replies={3: 1, 4: 3})])
    assert (figures.replies, figures.reply_distance) == (0.5, 2.0)


# Question 1 (a hit) is followed by 2; 9 replies to it through Discord's reply.
NEIGHBOURS = {1: Neighbour(None, 2, (2, 9), ())}


def test_a_question_lends_to_the_next_message_in_a_dialogue() -> None:
    spread = spread_with_loans({1: 2.0}, NEIGHBOURS, 0.0, (0.2, 0.5), {1}, 1.0, {1: (9,)}, {1: 1.0})
    assert (spread.scores[2], spread.scores[9]) == (2.0, 2.0)


def test_a_question_lends_only_to_its_discord_reply_where_the_channel_is_no_dialogue() -> None:
    spread = spread_with_loans({1: 2.0}, NEIGHBOURS, 0.0, (0.2, 0.5), {1}, 1.0, {1: (9,)}, {1: 0.0})
    assert 2 not in spread.scores and spread.scores[9] == 2.0
    assert spread.loans[9].reply == 2.0


def test_a_hit_lends_to_its_neighbours_by_the_channel_s_dialogue() -> None:
    neighbours = {5: Neighbour(4, 6, (6,), ())}
    halfway = spread_with_loans({5: 2.0}, neighbours, 0.0, (0.2, 0.5), (), 1.0, {}, {5: 0.5})
    assert halfway.scores == pytest.approx({5: 2.0, 4: 0.2, 6: 0.5})
    assert spread_with_loans({5: 2.0}, neighbours, 0.0, (0.2, 0.5), (), 1.0, {}, {5: 0.0}).scores == {5: 2.0}


async def remember_turns(ingest: IngestQueue, store: Store, make_record: RecordFactory, first: int,
                         count: int) -> None:
    """Messages ``first``... in channel 10 of guild 1, Ann and Ben taking turns, every third one a Discord reply to
    the message before it; one message in channel 11 and one in guild 2 that a channel-10 read must leave out (the
    latter written straight to the store: ingest refuses a channel id another guild holds, an older version did not)."""
    for message_id in range(first, first + count):
        record = make_record(message_id, f"line {message_id}?", author_id=ANN if message_id % 2 else BEN)
        await ingest.add(replace(record, reply_to_id=message_id - 1) if message_id % 3 == 0 else record)
    await ingest.add(make_record(first + 1000, "elsewhere", channel_id=11))
    await ingest.flush()
    await insert(store, make_record(first + 2000, "another guild", guild_id=2))


async def test_a_store_reads_a_channel_s_last_messages_oldest_first(
        search_engine: Any, memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory) -> None:
    await remember_turns(memory_ingest, memory_store, make_record, 1, 7)
    recent = await search_engine._recent_in_channel(1, 10, 4)
    assert recent == [RecentMessage(4, BEN, None, "line 4?"), RecentMessage(5, ANN, None, "line 5?"),
                      RecentMessage(6, BEN, 5, "line 6?"), RecentMessage(7, ANN, None, "line 7?")]


async def test_a_channel_s_structure_is_kept_until_its_refresh_time(
        search_engine: Any, memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory) -> None:
    await remember_turns(memory_ingest, memory_store, make_record, 1, 6)
    first = await search_engine.channel_structure(1, 10)
    assert (first.messages, first.dialogue, first.replies) == (6, 1.0, pytest.approx(0.3333))
    await remember_turns(memory_ingest, memory_store, make_record, 7, 6)
    assert await search_engine.channel_structure(1, 10) == first
    search_engine.tuning = replace(search_engine.tuning, structure_refresh_s=0.0)
    assert (await search_engine.channel_structure(1, 10)).messages == 12


async def test_searches_that_miss_a_channel_s_structure_together_read_it_once(
        search_engine: Any, memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory,
        monkeypatch: pytest.MonkeyPatch) -> None:
    await remember_turns(memory_ingest, memory_store, make_record, 1, 6)
    read, reads, started, release = search_engine._recent_in_channel, [], asyncio.Event(), asyncio.Event()

    async def held_read(guild_id: int, channel_id: int, limit: int) -> list[RecentMessage]:
        reads.append((guild_id, channel_id))
        started.set()
        await release.wait()
        return await read(guild_id, channel_id, limit)

    monkeypatch.setattr(search_engine, "_recent_in_channel", held_read)
    lookups = [asyncio.create_task(search_engine.channel_structure(1, 10)) for _ in range(3)]
    await started.wait()
    release.set()
    structures = await asyncio.gather(*lookups)
    assert reads == [(1, 10)]
    assert [structure.messages for structure in structures] == [6, 6, 6]


async def test_kept_structures_are_read_without_the_search_waiting_on_the_event_loop(
        search_engine: Any, memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory) -> None:
    await remember_turns(memory_ingest, memory_store, make_record, 1, 6)
    await remember_turns(memory_ingest, memory_store, make_record, 101, 6)  # channel 11 gets a second message too
    first = await search_engine._readings_of({1: 10, 2: 11}, 1)
    # Every reading (structure, vocabulary) kept: the look-up completes in its first step, no task to wait for.
    lookup = search_engine._readings_of({1: 10, 2: 11}, 1)
    with pytest.raises(StopIteration) as finished:
        lookup.send(None)
    assert finished.value.value == first
