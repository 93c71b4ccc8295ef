"""The reranker's time budget: candidates scored in first-stage order while the budget lasts, the rest unscored, and
no forward started that is expected to end past it (on a fake clock, so the figures are exact)."""

from __future__ import annotations

import pytest

from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.rerank import local as _rerank_local
from cogs.memory.rerank.local import LocalScorer
from cogs.memory.rerank.service import RerankerService
from tests.cogs.memory.rerank.test_service import DOCS, QUERY, candidates
from tests.fixtures.reranker import rerank_results, with_reranker

# The prompt tails of DOCS after the shared prefix (default instruction), in tokens: 65 for the first four.
TAIL_TOKENS = [23, 22, 10, 10, 18, 14, 24, 64, 19]
REAL_FORWARD = LocalScorer.forward_tails


def machine(monkeypatch: pytest.MonkeyPatch, clock: dict[str, float], seconds_per_token: float) -> list[list[int]]:
    """Forwards that take `seconds_per_token` per tail token on the fake clock; returns the packs they ran."""
    packs: list[list[int]] = []

    def timed_forward(self: LocalScorer, prefix_kv: list, tails: list) -> list[float]:
        packs.append([len(tail) for tail in tails])
        clock["t"] += seconds_per_token * sum(len(tail) for tail in tails)
        return REAL_FORWARD(self, prefix_kv, tails)

    monkeypatch.setattr(LocalScorer, "forward_tails", timed_forward)
    return packs


def unscored(profile: MemoryProfile) -> list[int]:
    service = RerankerService(profile)
    try:
        results = rerank_results(service, QUERY, candidates(), top_k=None)
    finally:
        service.close()
    return [r.message_id for r in results if r.rerank_score is None]


@pytest.fixture
def budgeted(tiny_reranker_profile: MemoryProfile) -> MemoryProfile:
    return with_reranker(tiny_reranker_profile, time_budget_ms=900, batch_size=4)


def test_the_tails_are_the_lengths_these_tests_assume(tiny_reranker_profile: MemoryProfile) -> None:
    scorer = LocalScorer(tiny_reranker_profile.reranker.model, "cpu", "float32", max_length=512)
    split = scorer.split_prompts(QUERY, DOCS, _rerank_local.DEFAULT_INSTRUCTION)
    assert [len(tail) for tail in split.tails] == TAIL_TOKENS


def test_the_budget_leaves_a_first_stage_tail_unscored(budgeted: MemoryProfile, monkeypatch: pytest.MonkeyPatch,
                                                       reranker_clock: dict[str, float]) -> None:
    machine(monkeypatch, reranker_clock, 0.010)
    # 0.65 s for the first pack of four, then 0.25 s left: the next pack is cut to the one candidate that fits.
    assert unscored(budgeted) == [5, 6, 7, 8]


def test_no_forward_starts_that_would_end_past_the_budget(budgeted: MemoryProfile, monkeypatch: pytest.MonkeyPatch,
                                                          reranker_clock: dict[str, float]) -> None:
    packs = machine(monkeypatch, reranker_clock, 0.010)
    unscored(budgeted)
    assert (packs, reranker_clock["t"] <= 0.9) == ([[23, 22, 10, 10], [18]], True)


def test_a_faster_machine_scores_more_in_the_same_budget(budgeted: MemoryProfile, monkeypatch: pytest.MonkeyPatch,
                                                         reranker_clock: dict[str, float]) -> None:
    machine(monkeypatch, reranker_clock, 0.010)
    slow = len(DOCS) - len(unscored(budgeted))
    reranker_clock["t"] = 0.0
    machine(monkeypatch, reranker_clock, 0.002)
    fast = len(DOCS) - len(unscored(budgeted))
    assert (slow, fast) == (5, 9)


def test_the_speed_learned_on_one_recall_cuts_the_first_pack_of_the_next(
    tiny_reranker_profile: MemoryProfile, monkeypatch: pytest.MonkeyPatch, reranker_clock: dict[str, float]
) -> None:
    packs = machine(monkeypatch, reranker_clock, 0.010)
    service = RerankerService(with_reranker(tiny_reranker_profile, time_budget_ms=500, batch_size=4))
    try:
        rerank_results(service, "a first question", candidates(["warm up"]))
        packs.clear()
        rerank_results(service, QUERY, candidates(), top_k=None)
    finally:
        service.close()
    # 0.5 s fits 45 tokens: the first two candidates, not the whole first pack of four (65 tokens, 0.65 s).
    assert packs == [[23, 22]]
