"""Keyword search in Chinese, Japanese and Korean on the bilingual fixture (bench/data/bilingual): the same
questions as in English find their evidence about as well. A real SQLite file and the real SqliteSearchEngine."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from bench.recall import GUILD_ID, Query, load_dataset, score
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore, NewRow, WriteBatch
from cogs.memory.language.keywords import fts_document
from cogs.memory.vectors.registry import IndexRegistry

DATA = Path(__file__).resolve().parents[4] / "bench" / "data" / "bilingual"


@pytest.fixture
async def fixture_search(store: SqliteStore, embedder: EmbeddingService, indexes: IndexRegistry,
                         core_profile: MemoryProfile) -> tuple[SqliteSearchEngine, list[Query]]:
    """Every message of the fixture stored with its keyword row as ingest writes it (no vector is searched here)."""
    records, queries = load_dataset(DATA / "messages.jsonl", DATA / "queries.jsonl")
    batch = WriteBatch(embedder.model_name, guild_ids={GUILD_ID})
    unused = np.zeros(embedder.dimension, dtype=np.float32)
    batch.inserts = [NewRow(rowid, record, record.content, fts_document(record.content), unused)
                     for rowid, record in zip(store.allocate_rowids(len(records)), records, strict=True)]
    await store.write(batch)
    return SqliteSearchEngine(store, embedder, indexes, core_profile), queries


async def keyword_ranking(engine: SqliteSearchEngine, query: Query) -> list[int]:
    filters = SearchFilters(guild_id=GUILD_ID, channel_ids=frozenset({query.channel_id}))
    return [hit.message_id for hit in await engine.search(query.question, filters, 50, mode="keyword")]


async def mean_recall(engine: SqliteSearchEngine, queries: list[Query], k: int) -> float:
    """The keyword side's recall@k, averaged over ``queries``."""
    return statistics.fmean([score(await keyword_ranking(engine, query), query.relevant)[f"recall@{k}"]
                             for query in queries])


def in_channel(queries: list[Query], channel: str) -> list[Query]:
    """The queries the fixture asks in ``channel`` (a conversation in one language, such as "c3-en")."""
    with (DATA / "queries.jsonl").open(encoding="utf-8") as file:
        questions = {row["question"] for row in map(json.loads, file) if row["channel"] == channel}
    return [query for query in queries if query.question in questions]


@pytest.mark.parametrize("question", [
    "Daniel在哪里上班？",
    "Daniel买了什么牌子的跑鞋？",
    "修iPhone屏幕要多少钱？",
    "Priya的第一个员工是谁？",
    "Lily数了多少个番茄？",
])
async def test_a_mixed_script_chinese_question_ranks_its_evidence_first(
    fixture_search: tuple[SqliteSearchEngine, list[Query]], question: str
) -> None:
    engine, queries = fixture_search
    query = next(query for query in queries if query.question == question)
    assert (await keyword_ranking(engine, query))[0] in query.relevant


async def test_chinese_keyword_recall_is_within_0_05_of_english(
    fixture_search: tuple[SqliteSearchEngine, list[Query]]
) -> None:
    engine, queries = fixture_search
    english = await mean_recall(engine, [query for query in queries if query.lang == "en"], 10)
    chinese = await mean_recall(engine, [query for query in queries if query.lang == "zh"], 10)
    assert chinese >= english - 0.05


@pytest.mark.parametrize("lang", ["ja", "ko"])
async def test_japanese_and_korean_keyword_recall_at_50_is_close_to_english(
    fixture_search: tuple[SqliteSearchEngine, list[Query]], lang: str
) -> None:
    engine, queries = fixture_search
    # Only conversation 3 is also in Japanese and Korean: compare with its English questions.
    english = await mean_recall(engine, in_channel(queries, "c3-en"), 50)
    assert await mean_recall(engine, in_channel(queries, f"c3-{lang}"), 50) >= english - 0.1
