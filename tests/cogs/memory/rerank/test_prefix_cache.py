"""The constant prompt prefix (system prompt + instruction) is computed once per instruction and reused across
queries, on both local backends, without changing a score."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogs.memory.rerank.local import LocalScorer
from cogs.memory.rerank.onnx import OnnxScorer
from tests.cogs.memory.rerank.test_service import DOCS, INSTRUCTION, QUERY, official_scores

OTHER_QUERY = "What did Melanie paint last year?"


@pytest.fixture(params=["torch", "onnx"])
def scorer(request: pytest.FixtureRequest, tiny_reranker_dir: Path, onnx_export_root: Path) -> LocalScorer:
    if request.param == "torch":
        return LocalScorer(str(tiny_reranker_dir), "cpu", "float32", max_length=512)
    return OnnxScorer(str(tiny_reranker_dir), 512, onnx_export_root)


@pytest.fixture
def forwards(scorer: LocalScorer, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(tokens already cached, tokens computed) for every prefix forward pass the scorer runs."""
    calls: list[tuple[int, int]] = []
    real = type(scorer)._extend_kv

    def spy(self: LocalScorer, past: list, ids: list[int]) -> list:
        calls.append((past[0][0].shape[-2] if past else 0, len(ids)))
        return real(self, past, ids)

    monkeypatch.setattr(type(scorer), "_extend_kv", spy)
    return calls


def test_second_query_with_the_same_instruction_reuses_the_constant_prefix(
    scorer: LocalScorer, forwards: list[tuple[int, int]]
) -> None:
    constant = len(scorer.constant_ids(INSTRUCTION))
    scorer.score(QUERY, DOCS, INSTRUCTION, 4)
    scorer.score(OTHER_QUERY, DOCS, INSTRUCTION, 4)
    assert [cached for cached, _ in forwards] == [0, constant, constant]
    assert forwards[0] == (0, constant) and scorer.constant_prefixes.hits == 1


def test_another_instruction_gets_its_own_constant_prefix(
    scorer: LocalScorer, forwards: list[tuple[int, int]]
) -> None:
    scorer.score(QUERY, DOCS, INSTRUCTION, 4)
    scorer.score(QUERY, DOCS, "Judge whether the message is about art", 4)
    assert [cached for cached, _ in forwards].count(0) == 2 and len(scorer.constant_prefixes) == 2


def test_scores_after_a_cache_hit_equal_the_official_method(scorer: LocalScorer, tiny_reranker_dir: Path) -> None:
    scorer.score(QUERY, DOCS, INSTRUCTION, 4)
    scores = scorer.score(OTHER_QUERY, DOCS, INSTRUCTION, 4)
    reference = official_scores(tiny_reranker_dir, OTHER_QUERY, DOCS, INSTRUCTION, 512)
    assert scorer.constant_prefixes.hits == 1
    assert max(abs(a - b) for a, b in zip(scores, reference, strict=True)) <= 1e-5


def test_constant_prefix_is_the_start_of_every_prompt(scorer: LocalScorer) -> None:
    constant = scorer.constant_ids(INSTRUCTION)
    assert all(ids[: len(constant)] == constant for ids in scorer.prompt_ids(QUERY, DOCS, INSTRUCTION))
