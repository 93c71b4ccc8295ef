"""The reranker's pool (search/pool.py): a hit's context enters right after it, read beside it, displacing the first
stage's tail; it is read through the store under the search's own filters, on both stores; Memory.recall reranks
the pool when the tuning widens it."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import pytest

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.memory import Memory
from cogs.memory.records import Hit, PooledBy, SearchFilters
from cogs.memory.rerank.service import RerankScores
from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.search.context import ChannelWindow
from cogs.memory.search.pool import Lent, context_of, judged, pool, widen
from cogs.memory.search.structure import ChannelStructure
from cogs.memory.store.rows import CandidateRow
from tests.fixtures.core import T0, RecordFactory

GUILD, OTHER_GUILD = 1, 2
GENERAL, SECRET = 10, 12
ALICE, BOB, CAROL = 100, 200, 300
WIDE = RankingTuning(pool_lenders=3, pool_per_hit=3, pool_burst=True, pool_guessed=True, pool_groups_only=False,
                     pool_full_from=0)

# (message_id, channel, author_id, author_name, content, reply_to_id); message ids double as minutes after T0.
PICNIC = [
    (1, GENERAL, CAROL, "carol", "anyone seen the new map?", None),
    (2, GENERAL, ALICE, "alice", "when is the picnic?", None),
    (3, GENERAL, BOB, "bob", "Saturday at 3", 2),
    (4, GENERAL, BOB, "bob", "bring a blanket", None),
    (5, SECRET, CAROL, "carol", "the secret plan for the picnic", None),
    (6, GENERAL, ALICE, "alice", "as carol said", 5),
]


def hit(message_id: int, content: str, author_name: str = "alice", rank: int = 1) -> Hit:
    return Hit(message_id=message_id, guild_id=GUILD, channel_id=GENERAL, author_id=ALICE, author_name=author_name,
               content=content, created_at=T0 + timedelta(minutes=message_id), score=10.0 - rank,
               sources=("keyword",), rank=rank)


def row(message_id: int, author_id: int, content: str, reply_to_id: int | None = None) -> CandidateRow:
    return CandidateRow(message_id, GUILD, GENERAL, None, author_id, {ALICE: "alice", BOB: "bob"}.get(author_id, "x"),
                        content, (T0 + timedelta(minutes=message_id)).timestamp(), reply_to_id)


def test_each_lender_brings_its_context_right_after_it_and_the_tail_gives_way() -> None:
    hits = [hit(message_id, f"text {message_id}", rank=rank) for rank, message_id in enumerate((10, 20, 30, 40), 1)]
    lent = {10: [Lent(row(11, BOB, "eleven"), "reply"), Lent(row(12, BOB, "twelve"), "burst")],
            20: [Lent(row(21, BOB, "twenty-one"), "answer")],
            30: [Lent(row(31, BOB, "thirty-one"), "reply")]}
    pooled = widen(hits, lent, depth=5, lenders=2, per_hit=1)
    assert [entry.hit.message_id for entry in pooled] == [10, 11, 20, 21, 30]
    assert [entry.hit.pooled_by for entry in pooled] == [None, PooledBy(10, "reply"), None, PooledBy(20, "answer"),
                                                         None]
    assert pooled[1].text == "alice: text 10\nbob: eleven"  # the lender came first
    assert pooled[0].text == "text 10"  # a first-stage hit reads as it always did


def test_a_message_enters_the_pool_once_where_it_first_comes() -> None:
    hits = [hit(10, "ten"), hit(11, "eleven", rank=2), hit(20, "twenty", rank=3)]
    lent = {10: [Lent(row(11, BOB, "eleven"), "reply"), Lent(row(9, BOB, "nine?"), "question")],
            11: [Lent(row(10, ALICE, "ten"), "replied")]}
    pooled = widen(hits, lent, depth=10, lenders=3, per_hit=2)
    assert [entry.hit.message_id for entry in pooled] == [10, 11, 9, 20]
    # 11 was also the first stage's: it keeps that hit's score and rank, and says it came in as 10's reply.
    assert (pooled[1].hit.rank, pooled[1].hit.pooled_by) == (2, PooledBy(10, "reply"))
    assert pooled[2].text == "bob: nine?\nalice: ten"  # the question came first


def test_what_the_reranker_did_not_score_keeps_the_first_stages_order_and_context_enters_only_when_judged() -> None:
    first = [hit(10, "ten"), hit(20, "twenty", rank=2), hit(30, "thirty", rank=3)]
    pooled = widen(first, {10: [Lent(row(11, BOB, "eleven"), "reply")]}, depth=3, lenders=1, per_hit=1)
    assert [entry.hit.message_id for entry in pooled] == [10, 11, 20]  # 30 gave way
    # Nothing scored (a reranker still loading): the first stage's hits, as they ranked, 30 included.
    candidates, scores = judged(pooled, [None, None, None], first)
    assert ([found.message_id for found in candidates], scores) == ([10, 20, 30], [None, None, None])
    # Only the first two scored (its time budget): the judged context stays, the rest follow in first-stage order.
    candidates, scores = judged(pooled, [0.2, 0.9, None], first)
    assert ([found.message_id for found in candidates], scores) == ([10, 11, 20, 30], [0.2, 0.9, None, None])


def test_a_hits_context_comes_discord_links_first_and_the_burst_and_guessed_ones_only_when_asked() -> None:
    rows = {1: row(1, BOB, "what time?"), 2: row(2, ALICE, "is the picnic on saturday?", reply_to_id=1),
            3: row(3, ALICE, "I can bring food"), 4: row(4, BOB, "yes at noon"), 5: row(5, CAROL, "gg")}
    window = ChannelWindow(previous=1, after=(3, 4, 5), replies=(5,))
    guessed = [(item.row.message_id, item.kind) for item in context_of(rows[2], window, rows, 3, guessed=True)]
    assert guessed == [(5, "reply"), (1, "replied"), (3, "burst"), (4, "answer")]
    known = [(item.row.message_id, item.kind) for item in context_of(rows[2], window, rows, 3, guessed=False)]
    assert known == [(5, "reply"), (1, "replied"), (3, "burst")]
    linked = [(item.row.message_id, item.kind) for item in context_of(rows[2], window, rows, 3, False, burst=False)]
    assert linked == [(5, "reply"), (1, "replied")]
    # A message the filters left out (not in rows) is never brought.
    del rows[5]
    assert [item.kind for item in context_of(rows[2], window, rows, 3, guessed=False)] == ["replied", "burst"]


class StubEngine:
    """Reads a fixed window and rows, and every channel at one ``dialogue``."""

    def __init__(self, dialogue: float) -> None:
        self.dialogue = dialogue

    async def context(self, message_ids: Any, filters: SearchFilters) -> Any:
        rows = {1: row(1, BOB, "what time?"), 2: row(2, ALICE, "I can bring food"), 3: row(3, BOB, "yes at noon"),
                4: row(4, ALICE, "and a blanket")}
        return {1: ChannelWindow(previous=None, after=(2, 3, 4), replies=(3,))}, rows

    async def channel_structure(self, guild_id: int, channel_id: int) -> ChannelStructure:
        return ChannelStructure(10, 2, 0.9, 0.1, 0.5, self.dialogue, 1.1, 0.3, 0.9, 0.1, 1.0)


@pytest.mark.parametrize(("dialogue", "expected"), [(1.0, [1, 3]), (0.1, [1, 3, 2])])
async def test_the_burst_and_guessed_context_enter_only_where_the_channel_reads_a_group(
        dialogue: float, expected: list[int]) -> None:
    # In a dialogue the first stage already lends by the order of messages: only Discord's links widen the pool.
    tuning = dataclasses.replace(WIDE, pool_groups_only=True)
    question = dataclasses.replace(hit(1, "what time?", "bob"), author_id=BOB)
    pooled = await pool(StubEngine(dialogue), [question], SearchFilters(guild_id=GUILD), 10, tuning)
    assert [entry.hit.message_id for entry in pooled] == expected


async def test_a_small_pool_takes_only_the_first_hits_discord_links() -> None:
    tuning = dataclasses.replace(WIDE, pool_groups_only=True, pool_full_from=20)
    question = dataclasses.replace(hit(1, "what time?", "bob"), author_id=BOB)
    small = await pool(StubEngine(0.1), [question, hit(9, "nine", rank=2)], SearchFilters(guild_id=GUILD), 6, tuning)
    assert [entry.hit.message_id for entry in small] == [1, 3, 9]
    full = await pool(StubEngine(0.1), [question, hit(9, "nine", rank=2)], SearchFilters(guild_id=GUILD), 20, tuning)
    assert [entry.hit.message_id for entry in full] == [1, 3, 2, 9]


async def remember_picnic(ingest: IngestQueue, make_record: RecordFactory) -> None:
    """The picnic talk stored, vectors and all."""
    for message_id, channel, author_id, name, content, reply_to in PICNIC:
        record = make_record(message_id, content, guild_id=GUILD, channel_id=channel, author_id=author_id,
                             author_name=name)
        await ingest.add(dataclasses.replace(record, reply_to_id=reply_to))
    await ingest.flush(vectors=True)


@pytest.fixture
async def picnic(search_engine: Any, memory_ingest: IngestQueue, make_record: RecordFactory) -> Any:
    """The picnic talk on one store kind or the other, with the same words in another guild."""
    await remember_picnic(memory_ingest, make_record)
    await memory_ingest.add(make_record(1001, "Saturday at 3", guild_id=OTHER_GUILD, channel_id=50))
    await memory_ingest.flush(vectors=True)
    return search_engine


def picnic_hit(message_id: int) -> Hit:
    _, channel, author_id, name, content, _ = PICNIC[message_id - 1]
    return dataclasses.replace(hit(message_id, content, name), channel_id=channel, author_id=author_id)


async def pooled_ids(engine: Any, hits: list[Hit], filters: SearchFilters) -> list[int]:
    return [entry.hit.message_id for entry in await pool(engine, hits, filters, 10, WIDE)]


async def test_a_questions_reply_and_its_burst_enter_the_pool_through_the_store(picnic: Any) -> None:
    pooled = await pool(picnic, [picnic_hit(2)], SearchFilters(guild_id=GUILD), 10, WIDE)
    assert [(entry.hit.message_id, entry.hit.pooled_by) for entry in pooled] == [
        (2, None), (3, PooledBy(2, "reply")), (1, PooledBy(2, "question"))]
    assert pooled[1].text == "alice: when is the picnic?\nbob: Saturday at 3"
    assert (pooled[1].hit.author_name, pooled[1].hit.channel_id, pooled[1].hit.sources) == ("bob", GENERAL,
                                                                                           ("context",))
    # Without guessed context, carol's question before it stays out.
    known = dataclasses.replace(WIDE, pool_guessed=False)
    assert [entry.hit.message_id for entry in await pool(picnic, [picnic_hit(2)], SearchFilters(guild_id=GUILD), 10,
                                                         known)] == [2, 3]


async def test_context_passes_the_searchs_own_filters(picnic: Any) -> None:
    # The message 6 replies to sits in a channel the member cannot read: it never enters the pool.
    readable = SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({GENERAL}))
    assert 5 not in await pooled_ids(picnic, [picnic_hit(6)], readable)
    assert 5 in await pooled_ids(picnic, [picnic_hit(6)], SearchFilters(guild_id=GUILD))  # it is there to find
    # Nor does bob's answer when the member asked for alice's messages, or for what came before it.
    assert await pooled_ids(picnic, [picnic_hit(2)], SearchFilters(guild_id=GUILD, author_ids=frozenset({ALICE}))) \
        == [2]
    before = SearchFilters(guild_id=GUILD, before=T0 + timedelta(minutes=2, seconds=30))
    assert await pooled_ids(picnic, [picnic_hit(2)], before) == [2, 1]
    excluded = SearchFilters(guild_id=GUILD, exclude_message_ids=frozenset({3}))
    assert 3 not in await pooled_ids(picnic, [picnic_hit(2)], excluded)


async def test_a_forgotten_reply_never_enters_the_pool(picnic: Any, memory_ingest: IngestQueue) -> None:
    await memory_ingest.delete([3])
    await memory_ingest.flush(vectors=True)
    # Bob's next line is now the answer the question guesses; the forgotten one is nowhere.
    assert await pooled_ids(picnic, [picnic_hit(2)], SearchFilters(guild_id=GUILD)) == [2, 4, 1]


async def test_another_guilds_messages_never_enter_the_pool(picnic: Any) -> None:
    # Asked for with another guild's filters, guild 1's hit brings nothing: its window is read in that guild only.
    stranger = dataclasses.replace(picnic_hit(2), guild_id=OTHER_GUILD)
    assert await pooled_ids(picnic, [stranger], SearchFilters(guild_id=OTHER_GUILD)) == [2]


class JudgingReranker:
    """Scores a text 1.0 when it holds ``answer``, else 0.1; keeps the texts it was given."""

    depth = 20

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.texts: list[str] = []

    async def ascore(self, query: str, texts: list[str], *, instruction: str | None = None) -> RerankScores:
        self.texts = list(texts)
        scores = tuple(1.0 if self.answer in text else 0.1 for text in texts)
        return RerankScores(scores, by="judge", offered=len(texts), cached=0)

    async def aclose(self) -> None:
        pass


async def test_a_widened_recall_reranks_the_context_with_its_lender_and_says_where_it_came_from(
        any_memory: Memory, make_record: RecordFactory) -> None:
    memory = any_memory
    await remember_picnic(memory.ingest, make_record)
    judge = JudgingReranker("picnic?\nbob: Saturday")
    memory.reranker = judge
    filters = SearchFilters(guild_id=GUILD, allowed_channel_ids=frozenset({GENERAL}))
    # The first stage ranks the question above its reply (no reply_lift), so that the reply comes through the pool.
    tuning = dataclasses.replace(memory.search_engine.tuning, reply_lift=0.0)
    memory.search_engine.tuning = dataclasses.replace(tuning, pool_lenders=0)
    plain = await memory.recall("picnic", filters, 3)
    assert not any("\n" in text for text in judge.texts)  # no lenders: the first stage's texts, as before
    assert all(found.pooled_by is None for found in plain.hits)
    memory.search_engine.tuning = tuning  # the default widens the pool
    widened = await memory.recall("picnic", filters, 3)
    best = widened.hits[0]
    assert (best.message_id, best.content, best.rerank_score, best.pooled_by) == (3, "Saturday at 3", 1.0,
                                                                                  PooledBy(2, "reply"))
