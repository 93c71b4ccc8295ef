"""The first stage with informativeness (search/informative.py): "nice" rides no loan, and what it lost shows."""

from __future__ import annotations

import dataclasses
from typing import Any

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import SearchFilters
from tests.fixtures.core import RecordFactory

GUILD, CHANNEL = 6, 61
CHATTER = ["nice", "lol", "gg", "nice one", "ok", "lol same", "nice!", "gg wp", "ok ok", "haha nice"] * 3


async def remember(ingest: IngestQueue, make_record: RecordFactory) -> None:
    # Two people taking turns (a dialogue: the guessed question loan at full strength): a question about the
    # picnic, answered by "nice", then chatter that makes "nice" one of the channel's commonest words.
    said = ["when is the picnic at the lake", "nice", "the weather looks fine", *CHATTER]
    for i, content in enumerate(said, start=1):
        await ingest.add(make_record(i, content, guild_id=GUILD, channel_id=CHANNEL, author_id=700 + i % 2))
    await ingest.flush(vectors=True)


async def test_a_content_free_answer_takes_no_loan_from_the_question_before_it(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    hits = await search_engine.search("picnic lake", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    nice = next((hit for hit in hits if hit.message_id == 2), None)
    assert hits[0].message_id == 1
    assert nice is None or (nice.parts.question_loan == 0.0 and nice.parts.informativeness == 0.0), nice


async def test_without_the_rule_the_content_free_answer_rides_the_question_s_loan(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    search_engine.tuning = dataclasses.replace(search_engine.tuning, informative_full_at=0.0)
    hits = await search_engine.search("picnic lake", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    nice = next(hit for hit in hits if hit.message_id == 2)
    assert nice.parts.question_loan > 0.0 and nice.parts.informativeness == 1.0


async def test_what_a_content_free_match_lost_is_a_score_part_when_its_own_score_is_damped(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    search_engine.tuning = dataclasses.replace(search_engine.tuning, informative_own=True)
    hits = await search_engine.search("nice", SearchFilters(guild_id=GUILD), 40, mode="keyword")
    assert hits and all(hit.parts.said_little < 0.0 for hit in hits if hit.content == "nice"), hits
    assert all(abs(hit.parts.total - hit.score) < 1e-6 for hit in hits)
