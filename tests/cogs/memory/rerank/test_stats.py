"""What the reranker reports about its last hour: per-query time, candidates scored, cache hits."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogs.memory.rerank.stats import RerankStats
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.rerank.service import RerankerService
from tests.cogs.memory.rerank.test_service import DOCS, QUERY, candidates
from tests.fixtures.reranker import rerank_results, with_reranker


@pytest.fixture
def service(tiny_reranker_profile: MemoryProfile, tmp_path: Path):
    svc = RerankerService(tiny_reranker_profile, export_dir=tmp_path)
    yield svc
    svc.close()


def test_each_query_is_counted_with_what_it_scored(service: RerankerService) -> None:
    rerank_results(service, QUERY, candidates())
    rerank_results(service, "another question", candidates()[:4])
    status = service.status()
    assert (status.last_hour.queries_last_hour, status.last_hour.offered_per_recall, status.last_hour.scored_per_recall) == (
        2, (len(DOCS) + 4) / 2, (len(DOCS) + 4) / 2)
    assert 0 < status.last_hour.p50_ms <= status.last_hour.p95_ms


def test_last_query_says_how_many_scores_came_from_the_cache(service: RerankerService) -> None:
    rerank_results(service, QUERY, candidates())
    rerank_results(service, QUERY, candidates())
    last = service.status().last_hour.last_query
    assert (last.offered, last.scored, last.cached) == (len(DOCS), len(DOCS), len(DOCS))


def test_prompt_prefix_cache_hits_are_reported(service: RerankerService) -> None:
    rerank_results(service, QUERY, candidates())
    rerank_results(service, "another question", candidates())
    assert service.status().prefix_cache_hits == 1


def test_candidates_past_the_budget_count_as_offered_not_scored(
    tiny_reranker_profile: MemoryProfile, tmp_path: Path, slow_batches: None
) -> None:
    # Every batch "takes" 10 s of a 1 s budget.
    service = RerankerService(with_reranker(tiny_reranker_profile, time_budget_ms=1000, batch_size=2),
                              export_dir=tmp_path)
    try:
        rerank_results(service, QUERY, candidates())
        last = service.status().last_hour.last_query
    finally:
        service.close()
    assert (last.offered, last.scored) == (len(DOCS), 2)


def test_queries_older_than_an_hour_leave_the_figures() -> None:
    now = {"t": 0.0}
    stats = RerankStats(clock=lambda: now["t"])
    stats.record(100.0, offered=10, scored=10, cached=0)
    now["t"] = 1800.0
    stats.record(300.0, offered=10, scored=4, cached=0)
    now["t"] = 3700.0
    summary = stats.summary()
    assert (summary.queries_last_hour, summary.p50_ms, summary.scored_per_recall) == (1, 300.0, 4.0)


def test_no_queries_means_no_percentiles() -> None:
    summary = RerankStats().summary()
    assert (summary.queries_last_hour, summary.p50_ms, summary.last_query) == (0, None, None)
