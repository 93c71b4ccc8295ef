"""The shipped `cpu-tiny` profile (machines under 4 GB of RAM) reranks with a classic cross-encoder: the real profile
file with only its model swapped for a tiny random one of the same architecture (XLMRobertaForSequenceClassification,
real MiniLM tokenizer), driven through Memory and its RerankerService."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import torch

from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import load_profile
from tests.cogs.memory.rerank.test_cpu_small import QUERY, memory_with_messages, recall
from tests.cogs.memory.rerank.test_cross_encoder import direct_logits
from tests.fixtures.core import RecordFactory
from tests.fixtures.reranker import with_reranker


@pytest.fixture
async def memory(tiny_multilingual_cross_encoder_dir: Path, db_path: Path, index_dir: Path,
                 make_record: RecordFactory) -> AsyncIterator[Memory]:
    """The shipped profile file as it is, but for the model (the tiny random cross-encoder) and the pool: without
    context candidates (search/pool.py) the reranker reads each hit's own text, which the logits below are of."""
    cpu_tiny = with_reranker(load_profile("cpu-tiny"), model=str(tiny_multilingual_cross_encoder_dir))
    cpu_tiny = dataclasses.replace(cpu_tiny, ranking=dataclasses.replace(cpu_tiny.ranking, pool_lenders=0))
    async with memory_with_messages(cpu_tiny, db_path, index_dir, make_record) as memory:
        yield memory


async def test_cpu_tiny_reranks_each_candidate_with_the_sigmoid_of_the_cross_encoders_logit(
    memory: Memory, tiny_multilingual_cross_encoder_dir: Path
) -> None:
    await memory.reranker.aload()
    results = await recall(memory)
    texts = [text for text, _ in results]
    expected = torch.sigmoid(direct_logits(tiny_multilingual_cross_encoder_dir, QUERY, texts)[:, 0]).tolist()
    assert len(results) == 5
    assert [score for _, score in results] == pytest.approx(expected, abs=1e-5)


async def test_cpu_tiny_runs_its_cross_encoder_on_torch_in_float32(memory: Memory) -> None:
    await memory.reranker.aload()
    await recall(memory)
    status = memory.reranker.status()
    assert (status.backend, status.dtype, status.loaded) == ("torch", "float32", True)

