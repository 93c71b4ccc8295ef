"""The Memory facade end to end: open/close, capture, search, recall, stats, restarts and profile switches.

Tests that ask for ``memory`` run on both stores (the SQLite file, and PostgreSQL as a DATABASE_URL selects it);
those that open a Memory on ``db_path`` themselves are about the SQLite file and its FAISS indexes."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import threading
from datetime import UTC
from pathlib import Path

import numpy as np
import pytest

from cogs.memory import memory as memory_module
from cogs.memory.store.sqlite.lock import DatabaseLock
from cogs.memory.vectors.embedding import DEFAULT_MODEL, resolve_model_path
from cogs.memory.store.sqlite.integrity import RESTORE_ADVICE
from cogs.memory.memory import Memory, MemoryOpenError
from cogs.memory.records import Hit, SearchFilters
from cogs.memory.rerank.service import RerankScores
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import RecordFactory, core_profile_for
from tests.fixtures.stores import fill

@pytest.fixture
def memory(any_memory: Memory) -> Memory:
    return any_memory


async def test_search_returns_hits_best_first(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    results = await memory.search("lake cabin booking", SearchFilters(guild_id=1), 5)
    assert results and all(isinstance(hit, Hit) and hit.created_at.tzinfo == UTC for hit in results)
    assert results[0].message_id in (1, 2)
    assert {hit.message_id for hit in results[:2]} == {1, 2}
    assert [result.rank for result in results] == list(range(1, len(results) + 1))


async def test_search_never_crosses_guilds(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    results = await memory.search("secret plans lake cabin guild two", SearchFilters(guild_id=1), 10)
    assert {result.guild_id for result in results} == {1}


async def test_search_respects_allowed_channels(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    filters = SearchFilters(guild_id=1, allowed_channel_ids=frozenset({11}))
    results = await memory.search("lake cabin", filters, 10)
    assert {result.channel_id for result in results} == {11}


@pytest.mark.parametrize("limit", [0, -5])
async def test_search_refuses_a_limit_below_one(memory: Memory, make_record: RecordFactory, limit: int) -> None:
    await fill(memory, make_record)
    with pytest.raises(ValueError, match=f"^limit must be a whole number of at least 1, not {limit}$"):
        await memory.search("lake cabin", SearchFilters(guild_id=1), limit)


@pytest.mark.parametrize("limit", [0, -5])
async def test_recall_refuses_a_limit_below_one(memory: Memory, make_record: RecordFactory, limit: int) -> None:
    await fill(memory, make_record)
    with pytest.raises(ValueError, match=f"^limit must be a whole number of at least 1, not {limit}$"):
        await memory.recall("lake cabin", SearchFilters(guild_id=1), limit)


async def test_recall_without_reranker_keeps_first_stage_order(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    first_stage = await memory.search("printer", SearchFilters(guild_id=1), 3)
    recalled = (await memory.recall("printer", SearchFilters(guild_id=1), 3)).hits
    assert [r.message_id for r in recalled] == [r.message_id for r in first_stage] and recalled
    assert [r.rerank_score for r in recalled] == [None] * len(first_stage)


async def test_a_recall_without_a_reranker_times_its_first_stage_and_says_nothing_reranked(
    memory: Memory, make_record: RecordFactory
) -> None:
    await fill(memory, make_record)
    recall = await memory.recall("printer", SearchFilters(guild_id=1), 2)
    assert (len(recall.hits), recall.candidates, recall.rerank, recall.reranked) == (2, 2, None, False)
    assert 0 < recall.first_stage_ms == recall.total_ms


async def test_a_reranked_recall_carries_its_own_stage_times_and_the_rerankers_figures(
    tiny_reranker_profile: MemoryProfile, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    memory = await Memory.open(tiny_reranker_profile, db_path, index_dir)
    try:
        await fill(memory, make_record)
        await memory.reranker.aload()  # a recall does not wait for the model to load
        first = await memory.recall("lake cabin", SearchFilters(guild_id=1), 2)
        again = await memory.recall("lake cabin", SearchFilters(guild_id=1), 2)
    finally:
        await memory.close()
    # The profile offers up to 20 candidates: guild 1's three messages are all the first stage has.
    assert (first.candidates, len(first.hits), first.reranked) == (3, 2, True)
    figures, cached = first.rerank, again.rerank
    assert (figures.offered, figures.scored, figures.cached, figures.by) == (3, 3, 0, "torch float32")
    assert (cached.offered, cached.scored, cached.cached) == (3, 3, 3)  # the same texts again: from the cache
    assert 0 < first.first_stage_ms and 0 < figures.ms
    assert first.first_stage_ms + figures.ms == pytest.approx(first.total_ms)


class HeldReranker:
    """Scores every text 1.0 and says which query it scored (``by``), but answers a query only once the test lets
    it (``answer``); ``last`` is what a reranker's own last-query record would hold, as ``status()`` reads it."""

    depth = 20  # candidates a recall offers it, as RerankerService.depth says

    def __init__(self, *queries: str) -> None:
        self.scored = {query: asyncio.Event() for query in queries}
        self.answer = {query: asyncio.Event() for query in queries}
        self.last: RerankScores | None = None

    async def ascore(self, query: str, texts: list[str], *, instruction: str | None = None) -> RerankScores:
        self.last = RerankScores((1.0,) * len(texts), by=query, offered=len(texts), cached=0)
        self.scored[query].set()
        await self.answer[query].wait()
        return RerankScores((1.0,) * len(texts), by=query, offered=len(texts), cached=0)

    async def aclose(self) -> None:
        pass


async def test_two_recalls_at_once_each_get_their_own_rerank_figures(memory: Memory,
                                                                    make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    reranker = HeldReranker("printer", "lake cabin")
    memory.reranker = reranker
    filters = SearchFilters(guild_id=1)
    printer = asyncio.create_task(memory.recall("printer", filters, 1))
    await reranker.scored["printer"].wait()
    cabin = asyncio.create_task(memory.recall("lake cabin", filters, 1))
    await reranker.scored["lake cabin"].wait()
    # The printer recall answers after the cabin's was scored: the reranker's last record is the cabin's now.
    reranker.answer["printer"].set()
    first = await printer
    reranker.answer["lake cabin"].set()
    second = await cabin
    assert (reranker.last.by, first.rerank.by, second.rerank.by) == ("lake cabin", "printer", "lake cabin")
    assert (first.rerank.offered, second.rerank.offered) == (first.candidates, second.candidates)
    assert first.hits[0].content == "Has anyone fixed the printer on floor two?"


@pytest.mark.parametrize("erase", ["forget", "delete"])
async def test_a_message_erased_while_the_reranker_scores_is_not_shown(memory: Memory, make_record: RecordFactory,
                                                                      erase: str) -> None:
    """A member's forget, or an automod's delete, lands while a recall that already read the message waits for the
    reranker: the recall does not show it."""
    await fill(memory, make_record)
    reranker = HeldReranker("printer")
    memory.reranker = reranker
    recall = asyncio.create_task(memory.recall("printer", SearchFilters(guild_id=1), 3))
    await reranker.scored["printer"].wait()
    erased = await (memory.forget_message(1, 3) if erase == "forget" else memory.delete([3]))
    reranker.answer["printer"].set()
    hits = (await recall).hits
    assert erased == 1 and hits and 3 not in [hit.message_id for hit in hits]
    assert 3 not in [hit.message_id for hit in (await memory.recall("printer", SearchFilters(guild_id=1), 3,
                                                                    rerank=False)).hits]


async def test_a_recall_does_not_wait_for_the_bulk_embedding_running(
    memory: Memory, make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fill(memory, make_record)
    running, release = threading.Event(), threading.Event()
    original = memory.embedder.embed_sync

    def slow_bulk(texts: list[str]) -> np.ndarray:
        running.set()
        release.wait(timeout=60)  # a recall stuck behind this batch fails the order below instead of hanging
        return original(texts)

    monkeypatch.setattr(memory.embedder, "embed_sync", slow_bulk)
    finished: list[str] = []

    async def bulk() -> None:
        await memory.embedder.embed(["a big import"] * memory.embedder.batch_size, interactive=False)
        finished.append("bulk")

    importing = asyncio.create_task(bulk())
    await asyncio.to_thread(running.wait)
    recalled = (await memory.recall("printer", SearchFilters(guild_id=1), 3)).hits
    finished.append("recall")
    release.set()
    await importing
    assert finished == ["recall", "bulk"]
    assert "vector" in recalled[0].sources


async def test_deleted_messages_are_not_found(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    before = await memory.search("printer floor two", SearchFilters(guild_id=1), 10)
    await memory.delete([3])
    results = await memory.search("printer floor two", SearchFilters(guild_id=1), 10)
    assert 3 in {result.message_id for result in before}
    assert 3 not in {result.message_id for result in results}


async def test_a_guild_cannot_forget_another_guilds_message(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    assert await memory.forget_message(1, 4) == 0
    assert [hit.message_id for hit in await memory.search("secret plans guild two", SearchFilters(guild_id=2), 5)][:1] \
        == [4]


async def test_who_wrote_a_message_and_where_is_read_from_what_memory_stored(
    memory: Memory, make_record: RecordFactory
) -> None:
    await fill(memory, make_record)
    author = make_record(1, "x").author_id
    assert (await memory.stored_channel(1, 3), await memory.stored_channel(1, 4), await memory.stored_channel(2, 4)) \
        == (11, None, 20)
    assert (await memory.written_by(1, author, 1), await memory.written_by(1, author + 1, 1)) == (True, False)


async def test_stats_count_messages_vectors_and_index_size(memory: Memory, make_record: RecordFactory) -> None:
    await fill(memory, make_record)
    stats = await memory.stats(1)
    assert (stats.messages, stats.index.vectors) == (3, 3)
    if isinstance(memory.store, SqliteStore):  # a FAISS index in this process
        assert stats.index.memory_bytes >= 3 * 384 * 4
    else:  # the vectors and their index live in the database
        assert stats.index.kind == "pgvector-hnsw"


async def test_close_stores_queued_messages_and_the_next_start_embeds_them(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, make_record: RecordFactory,
    caplog: pytest.LogCaptureFixture
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.add(make_record(1, "remember this after a restart"))
    await memory.close()
    with caplog.at_level(logging.WARNING):
        reopened = await Memory.open(core_profile, db_path, index_dir)
    await reopened.flush(vectors=True)
    stats = await reopened.stats(1)
    await reopened.close()
    assert (stats.messages, stats.index.vectors) == (1, 1)
    assert "Rebuilding" not in caplog.text


async def test_a_deleted_index_file_is_rebuilt_on_open(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, make_record: RecordFactory,
    caplog: pytest.LogCaptureFixture
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    await fill(memory, make_record)
    await memory.close()
    memory.indexes.path_for(1).unlink()
    with caplog.at_level(logging.WARNING):
        reopened = await Memory.open(core_profile, db_path, index_dir)
    results = await reopened.search("lake cabin", SearchFilters(guild_id=1), 2)
    await reopened.close()
    assert "Rebuilding the vector index of guild 1" in caplog.text
    assert "vector" in results[0].sources


async def test_an_unloadable_model_is_one_clear_error_that_memory_leaves_to_its_caller_to_say(
    db_path: Path, index_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    profile = core_profile_for(embedding_model=str(tmp_path))  # an empty directory
    with caplog.at_level(logging.WARNING), pytest.raises(MemoryOpenError) as error:
        await Memory.open(profile, db_path, index_dir)
    assert "Set embedding_model in profile 'test'" in str(error.value)
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []


async def test_switching_to_another_model_embeds_stored_messages(
    memory: Memory, make_record: RecordFactory
) -> None:
    await fill(memory, make_record)
    # The same weights under another name count as another model: every message is embedded again.
    other = dataclasses.replace(memory.profile, name="other", embedding_model=resolve_model_path(DEFAULT_MODEL))
    await memory.switch_profile(other)
    stats = await memory.stats(1)
    results = await memory.search("lake cabin", SearchFilters(guild_id=1), 2)
    assert stats.embedding_model == other.embedding_model
    assert (stats.messages, stats.index.vectors) == (3, 3)
    assert "vector" in results[0].sources


async def test_switching_batch_sizes_keeps_the_model(memory: Memory, make_record: RecordFactory) -> None:
    embedder = memory.embedder
    await memory.switch_profile(dataclasses.replace(memory.profile, embedding_batch_size=4, ingest_batch_size=2))
    await fill(memory, make_record)
    assert memory.embedder is embedder and embedder.batch_size == 4
    assert (await memory.stats(1)).index.vectors == 3


async def test_a_local_reranker_is_exported_beside_the_database(
    tiny_reranker_profile: MemoryProfile, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    profile = dataclasses.replace(tiny_reranker_profile,
                                  reranker=dataclasses.replace(tiny_reranker_profile.reranker, backend="onnx"))
    memory = await Memory.open(profile, db_path, index_dir)
    try:
        await memory.add(make_record(1, "We should book the cabin by the lake for July"))
        await memory.flush(vectors=True)
        await memory.reranker.aload()  # a recall does not wait for the model to load
        results = (await memory.recall("lake cabin", SearchFilters(guild_id=1), 5)).hits
        backend = memory.reranker.status().backend
    finally:
        await memory.close()
    assert backend == "onnx" and results[0].rerank_score is not None
    assert [p.name.endswith("-fp32") for p in (db_path.parent / "onnx").iterdir()] == [True]


async def test_auto_device_is_resolved_once_and_given_to_every_model(
    db_path: Path, index_dir: Path, make_record: RecordFactory, tiny_reranker_profile: MemoryProfile,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    resolved: list[str] = []

    def resolve(profile: MemoryProfile, hardware: object = None) -> str:
        resolved.append(profile.device)
        return "cpu"

    monkeypatch.setattr(memory_module, "resolve_device", resolve)
    memory = await Memory.open(dataclasses.replace(tiny_reranker_profile, device="auto"), db_path, index_dir)
    try:
        await memory.add(make_record(1, "the picnic moved to Saturday"))
        await memory.flush(vectors=True)
        await memory.reranker.aload()
        await memory.recall("picnic", SearchFilters(guild_id=1), 1)
        devices = (memory.embedder.device, memory.reranker.status().device)
    finally:
        await memory.close()
    assert (resolved, devices) == (["auto"], ("cpu", "cpu"))


async def test_close_closes_the_database_when_a_step_before_it_fails(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)

    async def disk_error() -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(memory.indexes, "close", disk_error)
    with pytest.raises(OSError, match="Input/output error"):
        await memory.close()
    restore = DatabaseLock(db_path)
    restore.exclusive()  # DatabaseInUse while any connection of this process still had the database open
    restore.release()


async def test_a_damaged_database_is_one_clear_error(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db_path.write_bytes(b"not a database" * 500)
    with caplog.at_level(logging.ERROR), pytest.raises(MemoryOpenError) as error:
        await Memory.open(core_profile, db_path, index_dir)
    assert str(error.value) == (f"the memory database {db_path} is damaged (file is not a database). "
                                + RESTORE_ADVICE.format(path=db_path))
    assert caplog.messages == []  # the caller says it, once: the bot in its log, the CLI as its error line
