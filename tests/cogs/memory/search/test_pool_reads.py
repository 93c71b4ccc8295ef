"""The reranker's pool lends from the context the first stage already read (first_stage.ContextRead): a recall reads
a hit's context once, the store is asked only for the lenders the first stage did not read, and what enters the
pool is what reading it again would bring, under the same filters, on both stores."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.memory import Memory
from cogs.memory.records import PooledBy, SearchFilters
from cogs.memory.search.pool import pool
from tests.cogs.memory.search.test_pool import (ALICE, GENERAL, GUILD, OTHER_GUILD, PICNIC, WIDE, JudgingReranker,
                                                picnic, remember_picnic)
from tests.fixtures.core import T0, RecordFactory

__all__ = ("picnic",)  # the fixture, shared with test_pool.py


def spy_on_context(engine: Any, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The message ids of each ``context`` read ``engine`` is asked for from now on."""
    asked: list[list[int]] = []
    read = engine.context

    async def context(message_ids: Sequence[int], filters: SearchFilters) -> Any:
        asked.append(list(message_ids))
        return await read(message_ids, filters)

    monkeypatch.setattr(engine, "context", context)
    return asked


async def test_a_recall_reads_no_context_the_first_stage_already_read(
        any_memory: Memory, make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = any_memory
    await remember_picnic(memory.ingest, make_record)
    memory.reranker = JudgingReranker("picnic?\nbob: Saturday")
    # The first stage ranks the question above its reply (no reply_lift), so that the reply comes through the pool.
    memory.search_engine.tuning = dataclasses.replace(memory.search_engine.tuning, reply_lift=0.0)
    asked = spy_on_context(memory.search_engine, monkeypatch)
    # Six messages: the first stage reads every one's window and row, and each reply's message, so the pool reads
    # nothing again.
    recalled = await memory.recall("picnic", SearchFilters(guild_id=GUILD), 3)
    assert asked == []
    best = recalled.hits[0]
    assert (best.message_id, best.rerank_score, best.pooled_by) == (3, 1.0, PooledBy(2, "reply"))


async def test_only_the_lenders_the_first_stage_did_not_read_are_read(picnic: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    filters = SearchFilters(guild_id=GUILD)
    searched = await picnic.searched("picnic", filters, 10)
    hits = list(searched.hits)
    first = next(rowid for rowid, row in searched.context.rows.items() if row.message_id == hits[0].message_id)
    # As if the first stage had read the window of its best hit alone.
    read = dataclasses.replace(searched.context, window={first: searched.context.window[first]})
    asked = spy_on_context(picnic, monkeypatch)
    partly = await pool(picnic, hits, filters, 10, WIDE, read)
    assert asked == [[hits[1].message_id, hits[2].message_id]]
    assert partly == await pool(picnic, hits, filters, 10, WIDE)  # what reading them all brings


FILTERS = {
    "unreadable channel": (SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({GENERAL})), lambda m: m != 5),
    "author": (SearchFilters(guild_id=GUILD, author_ids=frozenset({ALICE})), lambda m: PICNIC[m - 1][2] == ALICE),
    "time": (SearchFilters(guild_id=GUILD, before=T0 + timedelta(minutes=2, seconds=30)), lambda m: m <= 2),
    "excluded": (SearchFilters(guild_id=GUILD, exclude_message_ids=frozenset({3})), lambda m: m != 3),
}


@pytest.mark.parametrize("case", FILTERS)
async def test_what_the_first_stage_read_lends_only_what_passes_the_searchs_filters(picnic: Any, case: str) -> None:
    filters, passes = FILTERS[case]
    for query in ("picnic", "Saturday at 3", "as carol said"):
        searched = await picnic.searched(query, filters, 10)
        pooled = await pool(picnic, list(searched.hits), filters, 10, WIDE, searched.context)
        assert pooled and all(passes(entry.hit.message_id) for entry in pooled)
        assert pooled == await pool(picnic, list(searched.hits), filters, 10, WIDE)


async def test_a_forgotten_message_is_not_lent_from_what_the_first_stage_read(
        picnic: Any, memory_ingest: IngestQueue) -> None:
    await memory_ingest.delete([3])
    await memory_ingest.flush(vectors=True)
    searched = await picnic.searched("when is the picnic", SearchFilters(guild_id=GUILD), 10)
    pooled = await pool(picnic, list(searched.hits), SearchFilters(guild_id=GUILD), 10, WIDE, searched.context)
    assert 3 not in [entry.hit.message_id for entry in pooled]
    assert 4 in [entry.hit.message_id for entry in pooled]  # bob's next line still answers


async def test_another_guilds_search_lends_nothing_of_this_guild(picnic: Any) -> None:
    filters = SearchFilters(guild_id=OTHER_GUILD)
    searched = await picnic.searched("Saturday at 3", filters, 10)
    pooled = await pool(picnic, list(searched.hits), filters, 10, WIDE, searched.context)
    assert [entry.hit.message_id for entry in pooled] == [1001]
