"""Hybrid search weighs the vector side by how much of the query the embedding model reads (cogs/memory/language/coverage.py):
a Chinese question with the English-only MiniLM ranks as keyword search does; with a multilingual model (a tiny
random one saved as multilingual-e5-small) the vector side still counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogs.memory.language.coverage import covered_share, model_scripts
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import Hit, SearchFilters
from cogs.memory.store.sqlite.search import SqliteSearchEngine
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.fixtures.core import RecordFactory, core_profile_for

MESSAGES = ["上周我报了一个陶艺课，每周六上午", "陶艺课一共八节，学费是1200块", "Daniel在Ridgeway Cycles上班，天天修自行车",
            "周末我们去爬山吧", "我的猫又把花盆打翻了", "新手机的相机晚上拍得特别好"]
QUESTION = "陶艺课的学费是多少？"
FILTERS = SearchFilters(guild_id=1)


@pytest.mark.parametrize(("model", "scripts"), [
    ("all-MiniLM-L6-v2", "latin"), ("sentence-transformers/all-mpnet-base-v2", "latin"),
    ("BAAI/bge-small-en-v1.5", "latin"), ("intfloat/multilingual-e5-small", "all"),
    ("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2", "all"), ("BAAI/bge-m3", "all"),
])
def test_a_model_reads_the_scripts_its_name_says(model: str, scripts: str) -> None:
    assert model_scripts(model) == scripts


def test_a_profile_declares_what_its_model_reads() -> None:
    assert model_scripts("all-MiniLM-L6-v2", "all") == "all"


@pytest.mark.parametrize(("query", "share"), [
    ("What does Mei's class cost?", 1.0), ("陶艺课的学费是多少？", 0.0), ("Mei的陶艺课", 0.2), ("Kenji는 어디 가?", 0.25), ("Ｐｉｚｚａ?", 1.0),
    ("2024?", 1.0),
])
def test_an_english_model_reads_the_latin_letters_of_a_query(query: str, share: float) -> None:
    assert covered_share(query, "latin") == pytest.approx(share)


async def add_all(add: object, make_record: RecordFactory) -> None:
    for message_id, content in enumerate(MESSAGES, start=1):
        await add(make_record(message_id, content))  # type: ignore[operator]


def ranking(hits: list[Hit]) -> list[tuple[int, tuple[str, ...]]]:
    return [(hit.message_id, hit.sources) for hit in hits]


async def test_with_an_english_model_a_chinese_question_ranks_as_keyword_search_does(
    ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, indexes: IndexRegistry,
    core_profile: MemoryProfile, make_record: RecordFactory
) -> None:
    await add_all(ingest.add, make_record)
    await ingest.flush(vectors=True)
    engine = SqliteSearchEngine(store, embedder, indexes, core_profile)
    hybrid = await engine.search(QUESTION, FILTERS, 6, mode="hybrid")
    keyword = await engine.search(QUESTION, FILTERS, 6, mode="keyword")
    head, tail = hybrid[:len(keyword)], hybrid[len(keyword):]
    assert len(keyword) < 6 and ranking(head) == ranking(keyword)
    assert [hit.score for hit in head] == [hit.score for hit in keyword]
    # The vector side's nearest fill the list after the keyword ranking, never above it.
    assert {hit.message_id for hit in hybrid} == set(range(1, 7))
    assert all(hit.sources == ("vector",) and hit.score < head[-1].score for hit in tail)


async def test_with_a_multilingual_model_a_chinese_question_uses_the_vector_side(
    tiny_e5: Path, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    memory = await Memory.open(core_profile_for(embedding_model=str(tiny_e5)), db_path, index_dir)
    try:
        await add_all(memory.add, make_record)
        await memory.flush(vectors=True)
        hits = await memory.search_engine.search(QUESTION, FILTERS, 6, mode="hybrid")
    finally:
        await memory.close()
    assert any("vector" in hit.sources for hit in hits)
