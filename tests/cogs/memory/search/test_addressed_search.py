"""The first stage reads whom Discord replies address (search/context.py ``addressed``): in a group channel, where
the order of messages lends a guessed answer nothing, two who just replied to each other are talking."""

from __future__ import annotations

import dataclasses
from typing import Any

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.records import SearchFilters
from tests.fixtures.core import RecordFactory

GUILD, CHANNEL = 7, 71
ANN, BEN, CAL, DEV = 801, 802, 803, 804


async def remember(ingest: IngestQueue, make_record: RecordFactory, replying: bool = True) -> None:
    # Four people in bursts of two (a group: dialogue 0, too few replies to calibrate from). Ben replies to Ann's
    # line 9; Cal and Dev go on; Ann asks about the ferry and Ben answers, replying to nothing.
    said = [(CAL, "the map update is out"), (CAL, "servers restart at noon"), (DEV, "my tea went cold"),
            (DEV, "the cat sat on the keyboard"), (CAL, "patch notes are long"), (CAL, "read them later"),
            (DEV, "lunch was soup"), (DEV, "soup again tomorrow"), (ANN, "we should visit the coast"),
            (BEN, "yes the coast sounds good"), (CAL, "who broke the build"), (CAL, "the tests are red"),
            (DEV, "not me"), (DEV, "maybe the intern"), (ANN, "when does the ferry leave for the island?"),
            (BEN, "saturday at nine from pier four"), (CAL, "build is green now"), (DEV, "great news")]
    for i, (author, content) in enumerate(said, start=1):
        record = make_record(i, content, guild_id=GUILD, channel_id=CHANNEL, author_id=author,
                             author_name=str(author))
        await ingest.add(dataclasses.replace(record, reply_to_id=9) if replying and i == 10 else record)
    await ingest.flush(vectors=True)


async def test_a_guessed_answer_between_two_who_are_talking_keeps_the_question_s_loan(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record)
    hits = await search_engine.search("ferry island", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    # The pair keeps the whole loan, and a tenth more (reply_lift): the answer ranks above its question.
    answer, question = hits[0], hits[1]
    assert (answer.message_id, question.message_id) == (16, 15), hits
    assert answer.parts is not None and answer.parts.question_loan > question.score, hits
    assert (await search_engine.channel_structure(GUILD, CHANNEL)).dialogue == 0.0


async def test_without_the_exchange_the_group_lends_the_guess_nothing(
        search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> None:
    await remember(memory_ingest, make_record, replying=False)
    hits = await search_engine.search("ferry island", SearchFilters(guild_id=GUILD), 10, mode="keyword")
    answer = next((hit for hit in hits if hit.message_id == 16), None)
    assert answer is None or answer.parts.question_loan == 0.0, answer
