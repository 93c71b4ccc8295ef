"""RerankerService with the http provider against a local rerank server on 127.0.0.1 (Cohere/Jina `/v1/rerank` or
text-embeddings-inference `/rerank` shape)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cogs.memory.records import Hit
from cogs.memory.rerank.http import rerank_url
from cogs.memory.runtime.profile import MemoryProfile, RerankerSettings
from cogs.memory.rerank.service import RerankerService
from tests.fixtures.reranker import hits_of, rerank_results

DOCS = ["the sky is blue", "cats sleep a lot", "the support group met on Sunday"]


class FakeRerankServer(ThreadingHTTPServer):
    """Answers according to `mode`: "good", "error" (HTTP 500), "hang" (until released) or "malformed"."""

    mode = "good"
    requests: list[dict]
    release: threading.Event


class Handler(BaseHTTPRequestHandler):
    server: FakeRerankServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append({"path": self.path, **body})
        if self.server.mode == "error":
            self.send_error(500, "boom")
            return
        if self.server.mode == "hang":
            self.server.release.wait(10)
            return
        if self.server.mode == "malformed":
            payload = b'{"results": [{"index": 0, "relevance'
        elif "texts" in body:  # text-embeddings-inference: a bare list, best first
            results = [{"index": i, "score": (i + 1) / 10} for i in range(len(body["texts"]))]
            payload = json.dumps(results[::-1]).encode()
        else:  # scores rise with the document index, returned best first like Cohere/Jina
            results = [{"index": i, "relevance_score": (i + 1) / 10} for i in range(len(body["documents"]))]
            payload = json.dumps({"results": results[::-1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[FakeRerankServer]:
    httpd = FakeRerankServer(("127.0.0.1", 0), Handler)
    httpd.requests, httpd.release = [], threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.release.set()
    httpd.shutdown()
    httpd.server_close()


def http_service(server: FakeRerankServer, budget_ms: int = 5000, api: str = "cohere") -> RerankerService:
    url = f"http://127.0.0.1:{server.server_address[1]}"
    settings = RerankerSettings(provider="http", http_url=url, http_api=api, model="Qwen/Qwen3-Reranker-0.6B",
                                top_k=10, time_budget_ms=budget_ms)
    return RerankerService(MemoryProfile(name="test-http", reranker=settings))


def candidates() -> list[Hit]:
    return hits_of(DOCS)


def rerank(server: FakeRerankServer, budget_ms: int = 5000, api: str = "cohere") -> list[dict]:
    service = http_service(server, budget_ms, api)
    try:
        return rerank_results(service, "when did the group meet?", candidates())
    finally:
        service.close()


def test_request_is_the_cohere_jina_shape(server: FakeRerankServer) -> None:
    rerank(server)
    assert server.requests == [{"path": "/v1/rerank", "model": "Qwen/Qwen3-Reranker-0.6B",
                                "query": "when did the group meet?", "documents": DOCS, "top_n": 3}]


def test_good_answer_orders_by_relevance_score(server: FakeRerankServer) -> None:
    results = rerank(server)
    assert [(r.message_id, r.rerank_score) for r in results] == [(2, 0.3), (1, 0.2), (0, 0.1)]


def test_server_error_keeps_first_stage_order(server: FakeRerankServer) -> None:
    server.mode = "error"
    assert [(r.message_id, r.rerank_score) for r in rerank(server)] == [(0, None), (1, None), (2, None)]


def test_timeout_keeps_first_stage_order(server: FakeRerankServer) -> None:
    server.mode = "hang"
    assert [(r.message_id, r.rerank_score) for r in rerank(server, budget_ms=200)] == [
        (0, None), (1, None), (2, None)]


def test_malformed_json_keeps_first_stage_order(server: FakeRerankServer) -> None:
    server.mode = "malformed"
    assert [(r.message_id, r.rerank_score) for r in rerank(server)] == [(0, None), (1, None), (2, None)]


def test_failure_is_one_log_line(server: FakeRerankServer, caplog: pytest.LogCaptureFixture) -> None:
    server.mode = "error"
    rerank(server)
    lines = [r.getMessage() for r in caplog.records if r.name == "cogs.memory.rerank.service"]
    assert len(lines) == 1 and "HTTP 500" in lines[0]


def test_base_url_gets_the_rerank_path() -> None:
    assert rerank_url("http://gpu-box:8000/") == "http://gpu-box:8000/v1/rerank"


def test_full_endpoint_url_is_kept() -> None:
    assert rerank_url("http://gpu-box:8000/v1/rerank") == "http://gpu-box:8000/v1/rerank"


def test_tei_request_is_query_and_texts_on_its_rerank_path(server: FakeRerankServer) -> None:
    rerank(server, api="tei")
    assert server.requests == [{"path": "/rerank", "query": "when did the group meet?", "texts": DOCS,
                                "truncate": True}]


def test_tei_answer_orders_by_score(server: FakeRerankServer) -> None:
    results = rerank(server, api="tei")
    assert [(r.message_id, r.rerank_score) for r in results] == [(2, 0.3), (1, 0.2), (0, 0.1)]


def test_tei_base_url_gets_the_tei_path() -> None:
    assert rerank_url("http://gpu-box:8080", "tei") == "http://gpu-box:8080/rerank"
