"""EmbeddingService with the real packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from cogs.memory.vectors.query_trace import QueryTrace
from cogs.memory.vectors.embedding import (
    DEFAULT_MODEL,
    QUERY_THREADS,
    EmbeddingModelError,
    EmbeddingService,
    resolve_model_path,
)
from tests.fixtures.waiting import eventually


async def test_vectors_are_normalised_float32_rows(embedder: EmbeddingService) -> None:
    vectors = await embedder.embed(["hello there", "the weather is nice today"])
    assert vectors.dtype == np.float32
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


async def test_no_texts_give_an_empty_matrix(embedder: EmbeddingService) -> None:
    assert (await embedder.embed([])).shape == (0, 384)


async def test_similar_texts_score_higher_than_unrelated_ones(embedder: EmbeddingService) -> None:
    query, near, far = await embedder.embed(["going hiking this weekend", "a walk in the mountains on saturday",
                                             "my tax return is late"])
    assert query @ near > query @ far


async def test_a_vector_does_not_depend_on_its_batch(embedder: EmbeddingService) -> None:
    alone = await embedder.embed(["short"])
    batched = await embedder.embed(["a considerably longer sentence that forces padding in the batch", "short"])
    np.testing.assert_allclose(alone[0], batched[1], atol=1e-5)


@pytest.mark.parametrize(("interactive", "method"), [(True, "_embed_query"), (False, "embed_sync")])
async def test_embedding_runs_on_the_worker_thread(
    embedder: EmbeddingService, monkeypatch: pytest.MonkeyPatch, interactive: bool, method: str
) -> None:
    threads: list[str] = []
    original = getattr(embedder, method)

    def recording(texts: list[str]) -> np.ndarray:
        threads.append(threading.current_thread().name)
        return original(texts)

    monkeypatch.setattr(embedder, method, recording)
    await embedder.embed(["x"], interactive=interactive)
    assert threads and all(name.startswith("embedding") for name in threads)


async def test_a_query_gets_the_same_vectors_as_a_bulk_batch(embedder: EmbeddingService) -> None:
    assert isinstance(embedder._query_runner, QueryTrace)  # MiniLM on a CPU, no ONNX folder: the traced transformer
    texts = ["when is the picnic?", "a much longer question about who brought the lemonade to the picnic"]
    queries = await embedder.embed(texts, interactive=True)
    np.testing.assert_allclose(queries, embedder.embed_sync(texts), atol=1e-5)


def test_default_name_resolves_to_the_packaged_model() -> None:
    assert (Path(resolve_model_path(DEFAULT_MODEL)) / "config.json").exists()


def test_an_unloadable_model_raises_a_clear_error(tmp_path: Path) -> None:
    service = EmbeddingService(str(tmp_path))  # a directory with no model in it
    with pytest.raises(EmbeddingModelError, match="cannot load embedding model"):
        service.load()
    service.shutdown()


def test_an_unknown_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="dtype"):
        EmbeddingService(dtype="int8")


def test_bfloat16_vectors_stay_close_to_float32(embedder: EmbeddingService) -> None:
    service = EmbeddingService(dtype="bfloat16")
    service.load()
    texts = ["bf16 should barely move a sentence embedding"]
    low = service.embed_sync(texts)
    service.shutdown()
    assert low.dtype == np.float32
    assert float(np.linalg.norm(low[0])) == pytest.approx(1.0, abs=1e-5)
    assert float(low[0] @ embedder.embed_sync(texts)[0]) > 0.99


async def test_bulk_embedding_matches_one_call_in_order(embedder: EmbeddingService) -> None:
    texts = [f"message {i} " + "word " * (i % 7) for i in range(3 * embedder.batch_size + 5)]
    bulk = await embedder.embed(texts)
    np.testing.assert_allclose(bulk, embedder.embed_sync(texts), atol=1e-5)


async def test_a_query_runs_before_queued_bulk_batches(embedder: EmbeddingService,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    finished: list[str] = []

    async def tagged(name: str, texts: list[str]) -> None:
        await embedder.embed(texts)
        finished.append(name)

    submit = embedder._worker.submit
    bulk_jobs: list[int] = []

    def counted(function: Any, *args: Any, priority: int = 0, block: bool = True) -> Future:
        bulk_jobs.append(priority)
        return submit(function, *args, priority=priority, block=block)

    monkeypatch.setattr(embedder._worker, "submit", counted)
    bulk = asyncio.create_task(tagged("bulk", ["some ingest text"] * (4 * embedder.batch_size)))
    await eventually(lambda: len(bulk_jobs) == 4, what="the bulk batches are queued first")
    await tagged("query", ["a question"])
    await bulk
    assert finished == ["query", "bulk"]


# A search's query (embed_queries), and a few messages' texts (an edit), both count as queries.
QUERY_CALLS = {
    "search query": lambda embedder: embedder.embed_queries(["a question"]),
    "few texts": lambda embedder: embedder.embed(["a question"], interactive=True),
}


@pytest.mark.parametrize("query", QUERY_CALLS.values(), ids=QUERY_CALLS.keys())
async def test_a_query_does_not_wait_for_the_bulk_batch_running(
    embedder: EmbeddingService, monkeypatch: pytest.MonkeyPatch, query: Callable[[EmbeddingService], Awaitable]
) -> None:
    running, release = threading.Event(), threading.Event()
    original = embedder.embed_sync

    def slow_bulk(texts: list[str]) -> np.ndarray:
        running.set()
        release.wait(timeout=60)  # a query stuck behind this batch fails the order below instead of hanging
        return original(texts)

    monkeypatch.setattr(embedder, "embed_sync", slow_bulk)
    finished: list[str] = []

    async def tagged(name: str, work: Awaitable) -> None:
        await work
        finished.append(name)

    bulk_texts = ["some ingest text"] * embedder.batch_size
    bulk = asyncio.create_task(tagged("bulk", embedder.embed(bulk_texts, interactive=False)))
    await asyncio.to_thread(running.wait)
    await tagged("query", query(embedder))
    release.set()
    await bulk
    assert finished == ["query", "bulk"]


async def test_a_query_runs_on_one_intra_op_thread_and_bulk_work_on_the_default(
    embedder: EmbeddingService, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts: dict[str, int] = {}

    def counting(name: str, original: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
        def run(texts: list[str]) -> np.ndarray:
            counts[name] = torch.get_num_threads()
            return original(texts)

        return run

    monkeypatch.setattr(embedder, "_embed_query", counting("query", embedder._embed_query))
    monkeypatch.setattr(embedder, "embed_sync", counting("bulk", embedder.embed_sync))
    await embedder.embed(["a question"], interactive=True)
    await embedder.embed(["some ingest text"], interactive=False)
    assert counts == {"query": min(QUERY_THREADS, torch.get_num_threads()), "bulk": torch.get_num_threads()}


def test_a_model_without_a_transformer_module_is_not_traced(embedder: EmbeddingService) -> None:
    # Only the pooling and normalisation modules: nothing to trace, so queries run eagerly.
    assert QueryTrace.build(list(embedder._model)[1:]) is None


def test_an_unresolved_auto_device_is_refused() -> None:
    with pytest.raises(ValueError, match="device 'auto' must be resolved first"):
        EmbeddingService(device="auto")
