"""A Discord reply that answers a question ranks above the question (RankingTuning.reply_lift): the question holds
the words asked about, the reply what was asked."""

from __future__ import annotations

import dataclasses
from typing import Any

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import SearchFilters
from tests.fixtures.core import RecordFactory

GUILD, CHANNEL = 7, 72
ANN, BEN, CAL = 811, 812, 813
QUESTION, ANSWER = 5, 6


async def remember(ingest: IngestQueue, make_record: RecordFactory) -> None:
    said = [(CAL, "the island map update is out"), (CAL, "island servers restart at noon"), (BEN, "my tea went cold"),
            (CAL, "the ferry skin is ugly"), (ANN, "when does the ferry leave for the island?"),
            (BEN, "saturday at nine from pier four"), (CAL, "lol"), (BEN, "read them later")]
    replies = {ANSWER: QUESTION}
    for i, (author, content) in enumerate(said, start=1):
        record = make_record(i, content, guild_id=GUILD, channel_id=CHANNEL, author_id=author,
                             author_name=str(author))
        await ingest.add(dataclasses.replace(record, reply_to_id=replies[i]) if i in replies else record)
    await ingest.flush(vectors=True)


async def test_a_reply_that_says_something_ranks_above_the_question_it_answers(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    filters = SearchFilters(guild_id=GUILD)
    hits = await search_engine.search("ferry to the island", filters, 5)
    assert [hit.message_id for hit in hits[:2]] == [ANSWER, QUESTION], hits
    assert hits[0].parts.reply_loan > hits[1].score, hits[0].parts


async def test_without_the_lift_the_question_keeps_the_top(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    search_engine.tuning = dataclasses.replace(search_engine.tuning, reply_lift=0.0)
    hits = await search_engine.search("ferry to the island", SearchFilters(guild_id=GUILD), 5)
    assert hits[0].message_id == QUESTION, hits
