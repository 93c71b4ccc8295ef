"""A recall never waits for the reranker's model to load: it gets first-stage order while the load (or a first
ONNX export) goes on in the background, started at construction for a profile that preloads."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogs.memory.cog.replies import stats_embed
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from cogs.memory.rerank import service as reranker_service
from cogs.memory.rerank.service import RerankerService
from tests.cogs.memory.rerank.test_providers import STATS
from tests.cogs.memory.rerank.test_service import DOCS, QUERY, candidates
from tests.fixtures.core import RecordFactory
from tests.fixtures.reranker import HeldCall, arerank_results, hold, with_reranker
from tests.fixtures.waiting import awaiting, eventually

FIRST_STAGE = [(i, None) for i in range(len(DOCS))]


@pytest.fixture
def slow_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldCall]:
    """Each model load waits until the test releases it."""
    yield from hold(monkeypatch, reranker_service, "build_local_scorer")


@pytest.fixture
def preloading(tiny_reranker_profile: MemoryProfile) -> MemoryProfile:
    return with_reranker(tiny_reranker_profile, preload=True)


def pairs(results: list[dict]) -> list[tuple[int, float | None]]:
    return [(r.message_id, r.rerank_score) for r in results]


async def test_a_recall_while_the_model_loads_gets_first_stage_order(preloading: MemoryProfile,
                                                                     slow_load: HeldCall) -> None:
    service = RerankerService(preloading)
    try:
        results = await arerank_results(service, QUERY, candidates(), top_k=None)
    finally:
        slow_load.release.set()
        await service.aclose()
    assert pairs(results) == FIRST_STAGE


async def test_the_load_goes_on_after_a_recall_that_did_not_wait(preloading: MemoryProfile,
                                                                 slow_load: HeldCall) -> None:
    service = RerankerService(preloading)
    try:
        await arerank_results(service, QUERY, candidates())
        slow_load.release.set()
        await service.aload()
        results = await arerank_results(service, QUERY, candidates(), top_k=None)
    finally:
        slow_load.release.set()
        await service.aclose()
    assert (slow_load.calls, all(r.rerank_score is not None for r in results)) == (1, True)


async def test_a_preloading_profile_starts_loading_at_construction(preloading: MemoryProfile,
                                                                   slow_load: HeldCall) -> None:
    service = RerankerService(preloading)
    try:
        started = await asyncio.to_thread(slow_load.started.wait, 30)
        status = service.status()
    finally:
        slow_load.release.set()
        await service.aclose()
    assert (started, status.loading, status.loaded) == (True, True, False)


async def test_without_preload_the_first_recall_starts_the_load(tiny_reranker_profile: MemoryProfile,
                                                                slow_load: HeldCall) -> None:
    service = RerankerService(tiny_reranker_profile)
    try:
        before = service.status().loading
        results = await arerank_results(service, QUERY, candidates(), top_k=None)
        after = service.status().loading
    finally:
        slow_load.release.set()
        await service.aclose()
    assert (before, pairs(results), after) == (False, FIRST_STAGE, True)


async def test_memory_recall_does_not_wait_for_a_loading_reranker(
    preloading: MemoryProfile, slow_load: HeldCall, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    memory = await Memory.open(preloading, db_path, index_dir)
    try:
        await memory.add(make_record(1, "We should book the cabin by the lake for July"))
        await memory.flush(vectors=True)
        results = (await memory.recall("lake cabin", SearchFilters(guild_id=1), 5)).hits
    finally:
        slow_load.release.set()
        await memory.close()
    assert [(r.content, r.rerank_score) for r in results] == [
        ("We should book the cabin by the lake for July", None)]


async def test_a_preloaded_model_has_the_instructions_prompt_ready_for_the_first_recall(
    preloading: MemoryProfile
) -> None:
    service = RerankerService(preloading)
    try:
        await service.aload()
        await arerank_results(service, QUERY, candidates())
        status = service.status()
    finally:
        await service.aclose()
    assert status.prefix_cache_hits == 1


async def test_stats_say_the_reranker_is_loading(preloading: MemoryProfile, slow_load: HeldCall) -> None:
    service = RerankerService(preloading)
    try:
        status = service.status()
    finally:
        slow_load.release.set()
        await service.aclose()
    embed = stats_embed("G", STATS, preloading.name, status, {"search": [], "recall": []})
    fields = {field.name: field.value for field in embed.fields}
    assert (fields["Reranker"], fields["Reranking (last hour)"]) == (
        f"{preloading.reranker.model} (local, loading)", "loading · no queries in the last hour")


@pytest.fixture
def slow_tokenizer(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldCall]:
    """Each reranker tokenizer load waits until the test releases it."""
    yield from hold(monkeypatch, reranker_service, "load_tokenizer")


async def test_memory_opens_once_the_preloading_rerankers_tokenizer_is_parsed(
    preloading: MemoryProfile, slow_tokenizer: HeldCall, slow_load: HeldCall, db_path: Path, index_dir: Path
) -> None:
    opening = asyncio.create_task(Memory.open(preloading, db_path, index_dir))
    try:
        await asyncio.to_thread(slow_tokenizer.started.wait, 30)
        await eventually(lambda: opening.done() or awaiting(opening, "tokenizers_loaded"),
                         what="the open waits for the tokenizer, or is done")
        open_before_the_tokenizer = opening.done()
        slow_tokenizer.release.set()
        memory = await opening
        status = memory.reranker.status()  # the model itself still loads in the background
    finally:
        slow_tokenizer.release.set()
        slow_load.release.set()
        if opening.done() and not opening.exception():
            await opening.result().close()
    assert (open_before_the_tokenizer, slow_tokenizer.threads, status.loading) == (
        False, [f"reranker-loader-{preloading.name}"], True)
