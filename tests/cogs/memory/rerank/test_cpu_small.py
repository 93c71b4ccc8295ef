"""The shipped `cpu-small` profile reranks: the real profile file with only its model swapped for the tiny random
Qwen3 (real tokenizer). It exports to ONNX on first load on the loader thread, a recall during the export gets
first-stage order at once, and a recall after it has rerank scores."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile, load_profile
from cogs.memory.records import SearchFilters
from cogs.memory.rerank import onnx as _rerank_onnx
from tests.cogs.memory.rerank.test_providers import STATS
from tests.fixtures.core import RecordFactory
from tests.fixtures.reranker import HeldCall, hold, with_reranker

MESSAGES = [
    "We should book the cabin by the lake for July",
    "The lake cabin has room for six people",
    "Remember to bring the kayak to the cabin",
    "My cat knocked the plant off the shelf again",
    "Who is cooking dinner at the lake on Saturday?",
    "The cabin booking closes on Friday",
]
QUERY = "lake cabin"


@pytest.fixture
def cpu_small(tiny_reranker_dir: Path) -> MemoryProfile:
    """The shipped profile file as it is, but for the model: the tiny random reranker."""
    return with_reranker(load_profile("cpu-small"), model=str(tiny_reranker_dir))


@pytest.fixture
def slow_export(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldCall]:
    """The ONNX export waits until the test releases it."""
    yield from hold(monkeypatch, _rerank_onnx, "ensure_export")


@contextlib.asynccontextmanager
async def memory_with_messages(profile: MemoryProfile, db_path: Path, index_dir: Path,
                               make_record: RecordFactory) -> AsyncIterator[Memory]:
    """A Memory opened with `profile`, MESSAGES stored and embedded."""
    memory = await Memory.open(profile, db_path, index_dir)
    try:
        for n, text in enumerate(MESSAGES, start=1):
            await memory.add(make_record(n, text))
        await memory.flush(vectors=True)
        yield memory
    finally:
        await memory.close()


@pytest.fixture
async def memory(cpu_small: MemoryProfile, db_path: Path, index_dir: Path,
                 make_record: RecordFactory) -> AsyncIterator[Memory]:
    async with memory_with_messages(cpu_small, db_path, index_dir, make_record) as memory:
        yield memory


async def recall(memory: Memory) -> list[tuple[str, float | None]]:
    results = (await memory.recall(QUERY, SearchFilters(guild_id=1), 5)).hits
    return [(r.content, r.rerank_score) for r in results]


async def test_a_recall_on_cpu_small_attaches_a_rerank_score_to_each_candidate(memory: Memory) -> None:
    await memory.reranker.aload()
    scores = [score for _, score in await recall(memory)]
    assert len(scores) == 5 and all(score is not None and 0.0 <= score <= 1.0 for score in scores)


async def test_cpu_small_reranks_on_onnx_runtime_in_float32(
    cpu_small: MemoryProfile, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    """Without the measured choice of precision (test_precision_service.py has it), float32 on ONNX Runtime."""
    async with memory_with_messages(with_reranker(cpu_small, precisions=()), db_path, index_dir,
                                    make_record) as memory:
        await memory.reranker.aload()
        await recall(memory)
        status = memory.reranker.status()
    assert (status.backend, status.dtype, status.loaded) == ("onnx", "float32", True)


async def test_cpu_small_measures_its_precision_on_the_loader_thread(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="cogs.memory.rerank"):
        await memory.reranker.aload()
    await recall(memory)
    status = memory.reranker.status()
    assert status.loaded and (status.precision or "").split(" ")[0] in ("int8", "bf16", "float32")
    [line] = [r for r in caplog.records if r.getMessage().startswith("reranker precision ")]
    assert line.threadName == "reranker-loader-cpu-small"


async def test_cpu_small_falls_back_to_torch_when_onnx_runtime_cannot_load(
    cpu_small: MemoryProfile, db_path: Path, index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    memory = await Memory.open(with_reranker(cpu_small, precisions=()), db_path, index_dir)
    try:
        await memory.reranker.aload()
        status = memory.reranker.status()
    finally:
        await memory.close()
    assert (status.backend, status.dtype) == ("torch", "float32")


async def test_a_recall_during_the_first_onnx_export_gets_first_stage_order(
    slow_export: HeldCall, memory: Memory
) -> None:
    first_stage = [(c.content, None) for c in await memory.search(QUERY, SearchFilters(guild_id=1), 5)]
    try:
        results = await recall(memory)
    finally:
        slow_export.release.set()
    assert results == first_stage


async def test_stats_say_loading_while_the_first_onnx_export_runs(
    slow_export: HeldCall, memory: Memory
) -> None:
    from cogs.memory.cog.replies import stats_embed

    try:
        started = await asyncio.to_thread(slow_export.started.wait, 30)
        status = memory.reranker.status()
    finally:
        slow_export.release.set()
    embed = stats_embed("G", STATS, "cpu-small", status, {"search": [], "recall": []})
    reranker_field = next(field.value for field in embed.fields if field.name == "Reranker")
    assert (started, status.loading, reranker_field) == (
        True, True, f"{memory.profile.reranker.model} (local, loading)")


async def test_the_first_onnx_export_runs_on_the_loader_thread_with_progress_in_the_log(
    slow_export: HeldCall, memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="cogs.memory.rerank"):
        slow_export.release.set()
        await memory.reranker.aload()
    lines = [r.getMessage() for r in caplog.records]
    # Every export runs there: float32, and int8 for the measured choice of precision (the profile allows it).
    assert set(slow_export.threads) == {"reranker-loader-cpu-small"} and slow_export.threads
    assert any(line.startswith("exporting reranker ") for line in lines)
    assert any(line.startswith("ONNX export of ") and "layers written" in line for line in lines)
