"""Coordination (search/coordination.py, fusion.coordinated): a keyword hit that holds part of the question keeps
that share of its standardised score in a hybrid search, so "picnic!!" no longer ranks as if it answered all of
"picnic lake saturday"; a keyword search alone, and what a hit lends, keep its whole match."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import Hit, SearchFilters
from cogs.memory.search.coordination import held_share
from cogs.memory.search.fusion import Fused, Side, coordinated
from cogs.memory.search.informative import terms_of, vocabulary
from tests.fixtures.core import RecordFactory

GUILD, CHANNEL = 7, 71


def test_a_message_holding_every_term_of_the_question_holds_all_of_it() -> None:
    assert held_share(terms_of("picnic lake saturday"), "The picnic at the lake is on Saturday", "bob") == 1.0


def test_the_share_held_is_weighed_by_each_term_s_rarity_in_the_channel() -> None:
    # "lake" is in most of the channel's messages, "picnic" in one: holding "picnic" is most of the question.
    known = vocabulary(["the lake is cold", "lake trip", "lake view", "a picnic", "lake lake", "nice lake"])
    query = terms_of("picnic lake")
    picnic, lake = held_share(query, "picnic!!", "bob", known), held_share(query, "the lake", "bob", known)
    assert picnic > 0.5 > lake > 0.0
    assert picnic + lake == pytest.approx(1.0)


def test_a_term_is_held_by_stem_and_by_the_author_s_name() -> None:
    query = terms_of("which phone did Jo get")  # phone, jo
    assert held_share(query, "new phones day!!", "jo") == 1.0
    assert held_share(query, "new phones day!!", "sam") == pytest.approx(0.5)
    assert held_share(query, "no idea", "sam") == 0.0


def test_a_question_of_no_term_is_held_whole_and_a_bigram_term_inside_the_text() -> None:
    assert held_share((), "anything", "bob") == 1.0
    assert held_share(terms_of("陶艺课"), "我报了陶艺课", "bob") == 1.0


def fused_of(vector: dict[int, float], keyword: dict[int, float], keyword_floor: float = -1.0) -> Fused:
    sides = (Side("vector", 0.5, vector, -2.0), Side("keyword", 0.5, keyword, keyword_floor))
    scores = {rowid: sum(side.weight * side.scores.get(rowid, side.floor) for side in sides)
              for rowid in {*vector, *keyword}}
    return Fused(scores, -1.5, {}, [], sides)


def test_coordinated_scales_what_a_keyword_hit_scores_above_the_floor_by_its_share() -> None:
    fused = coordinated(fused_of({1: 1.0, 2: 1.0, 3: 0.5}, {1: 3.0, 2: 3.0}), {1: 1.0, 2: 0.25}, 0.5)
    keyword = fused.sides[1].scores
    assert keyword == {1: 3.0, 2: pytest.approx(-1.0 + 4.0 * 0.5)}
    assert fused.sides[0].scores == {1: 1.0, 2: 1.0, 3: 0.5}  # the vector side is left alone
    assert fused.scores[1] > fused.scores[2] == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)
    assert fused.scores[3] == pytest.approx(0.5 * 0.5 + 0.5 * -1.0)  # no keyword hit: the floor, as before


def test_coordinated_changes_nothing_with_one_side_or_power_0() -> None:
    both = fused_of({1: 1.0}, {1: 3.0, 2: 2.0})
    assert coordinated(both, {1: 0.1, 2: 0.1}, 0.0) is both
    alone = Fused({1: 3.0}, 0.0, {}, [], (Side("keyword", 1.0, {1: 3.0}, 0.0),))
    assert coordinated(alone, {1: 0.1}, 0.5) is alone


async def remember(ingest: IngestQueue, make_record: RecordFactory) -> None:
    said = ["the picnic is at the lake on saturday", "picnic!!", "we should bring sandwiches",
            "my bike has a flat tyre", "the printer on floor two is broken", "who wants coffee",
            "the meeting moved to friday", "lunch at noon?", "i lost my keys again", "the train was late"]
    for i, content in enumerate(said, start=1):
        await ingest.add(make_record(i, content, guild_id=GUILD, channel_id=CHANNEL, author_id=800 + i % 2,
                                     author_name=f"member{i % 2}"))
    await ingest.flush(vectors=True)


async def parts_by_id(engine: Any, mode: str, power: float) -> dict[int, Hit]:
    engine.tuning = dataclasses.replace(engine.tuning, keyword_coordination=power)
    hits = await engine.search("picnic lake saturday", SearchFilters(guild_id=GUILD), 10, mode=mode)
    assert all(abs(hit.parts.total - hit.score) < 1e-6 for hit in hits), hits
    return {hit.message_id: hit for hit in hits}


async def test_a_hybrid_search_weighs_a_keyword_hit_by_the_share_of_the_question_it_holds(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    off, on = await parts_by_id(search_engine, "hybrid", 0.0), await parts_by_id(search_engine, "hybrid", 0.5)
    whole, part = (on[1].parts.keyword, off[1].parts.keyword), (on[2].parts.keyword, off[2].parts.keyword)
    assert whole[0] is not None and part[0] is not None and part[1] is not None
    assert whole[0] == pytest.approx(whole[1])  # holds every term: its whole match
    assert part[0] < part[1]  # "picnic!!" holds one of three terms
    assert on[1].score - on[2].score > off[1].score - off[2].score


async def test_a_keyword_search_alone_keeps_its_own_scores(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    off, on = await parts_by_id(search_engine, "keyword", 0.0), await parts_by_id(search_engine, "keyword", 0.5)
    assert {rowid: hit.score for rowid, hit in on.items()} == {rowid: hit.score for rowid, hit in off.items()}
