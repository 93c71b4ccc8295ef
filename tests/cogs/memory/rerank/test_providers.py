"""Reranker providers in order: a server that fails, hangs past its own timeout or is down hands the recall to the
next provider (another server, or the local model); the first that answers is the only one asked."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from cogs.memory.cog.replies import stats_embed
from cogs.memory.records import MemoryStats
from cogs.memory.vectors.index import IndexUsage
from cogs.memory.runtime.profile import MemoryProfile, ProviderSettings, RerankerSettings
from cogs.memory.rerank.providers import Provider
from cogs.memory.rerank.service import RerankerService
from tests.cogs.memory.rerank.test_http import DOCS, FakeRerankServer, Handler, candidates
from tests.fixtures.reranker import rerank_results, with_reranker

QUESTION = "when did the group meet?"
SERVER_ORDER = [(2, 0.3), (1, 0.2), (0, 0.1)]  # what a good FakeRerankServer answers
NO_LATENCIES = {"search": [], "recall": []}


def start_server(mode: str) -> FakeRerankServer:
    httpd = FakeRerankServer(("127.0.0.1", 0), Handler)
    httpd.mode, httpd.requests, httpd.release = mode, [], threading.Event()
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@pytest.fixture
def servers() -> Iterator[dict[str, FakeRerankServer]]:
    started = {mode: start_server(mode) for mode in ("good", "error", "hang")}
    yield started
    for httpd in started.values():
        httpd.release.set()
        httpd.shutdown()
        httpd.server_close()


def http(server: FakeRerankServer, timeout_ms: int = 0) -> ProviderSettings:
    return ProviderSettings(provider="http", http_url=f"http://127.0.0.1:{server.server_address[1]}",
                            timeout_ms=timeout_ms)


def chain(*providers: ProviderSettings, budget_ms: int = 5000) -> MemoryProfile:
    settings = RerankerSettings(model="Qwen/Qwen3-Reranker-0.6B", top_k=10, time_budget_ms=budget_ms,
                                providers=providers)
    return MemoryProfile(name="test-chain", reranker=settings)


def rerank(profile: MemoryProfile) -> tuple[list[tuple[int, float | None]], dict]:
    service = RerankerService(profile)
    try:
        results = rerank_results(service, QUESTION, candidates())
        return [(r.message_id, r.rerank_score) for r in results], service.status()
    finally:
        service.close()


def test_a_failing_server_hands_the_recall_to_the_next(servers: dict[str, FakeRerankServer]) -> None:
    scored, _ = rerank(chain(http(servers["error"]), http(servers["good"])))
    assert (scored, len(servers["error"].requests)) == (SERVER_ORDER, 1)


def test_a_hanging_server_is_left_after_its_own_timeout(servers: dict[str, FakeRerankServer]) -> None:
    # The hanging server would hold the whole 5 s budget; its own 200 ms timeout leaves time for the next.
    scored, _ = rerank(chain(http(servers["hang"], timeout_ms=200), http(servers["good"])))
    assert scored == SERVER_ORDER


def test_a_server_that_is_down_hands_the_recall_to_the_next(servers: dict[str, FakeRerankServer]) -> None:
    down = ProviderSettings(provider="http", http_url="http://127.0.0.1:9/", timeout_ms=500)
    scored, _ = rerank(chain(down, http(servers["good"])))
    assert scored == SERVER_ORDER


def test_the_first_provider_that_answers_is_the_only_one_asked(servers: dict[str, FakeRerankServer]) -> None:
    rerank(chain(http(servers["good"]), http(servers["error"])))
    assert (len(servers["good"].requests), servers["error"].requests) == (1, [])


def test_when_every_provider_fails_first_stage_order_stays(servers: dict[str, FakeRerankServer]) -> None:
    scored, status = rerank(chain(http(servers["error"]), http(servers["hang"], timeout_ms=200)))
    assert (scored, status.last_error.endswith("timed out")) == ([(0, None), (1, None), (2, None)], True)


def test_the_local_model_is_the_fallback_for_a_failing_server(servers: dict[str, FakeRerankServer],
                                                              tiny_reranker_profile: MemoryProfile) -> None:
    profile = with_reranker(tiny_reranker_profile, providers=(http(servers["error"]), ProviderSettings("local")))
    scored, status = rerank(profile)
    direct, _ = rerank(tiny_reranker_profile)
    assert (scored, status.last_hour.scored_by) == (direct, {"torch float32": 1})


def test_a_provider_timeout_is_cut_to_what_the_recall_has_left() -> None:
    provider = Provider(ProviderSettings(provider="http", http_url="http://x", timeout_ms=2000), "m")
    assert (provider.deadline(None, 10.0), provider.deadline(11.0, 10.0), provider.deadline(20.0, 10.0)) == (
        12.0, 11.0, 12.0)


def test_stats_show_each_provider_in_order(servers: dict[str, FakeRerankServer],
                                           tiny_reranker_profile: MemoryProfile) -> None:
    profile = with_reranker(tiny_reranker_profile, providers=(http(servers["good"]), ProviderSettings("local")))
    service = RerankerService(profile)
    try:
        status = service.status()
    finally:
        service.close()
    fields = {f.name: f.value for f in stats_embed("G", STATS, "test-tiny", status, NO_LATENCIES).fields}
    assert fields["Reranker"] == f"{profile.reranker.model} (http: not loaded yet → local: not loaded yet)"


STATS = MemoryStats(messages=0, index=IndexUsage(vectors=0, memory_bytes=0, file_bytes=0, kind="flat"),
                    embedding_model="all-MiniLM-L6-v2", queued=0)
