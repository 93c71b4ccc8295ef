"""Scoring through a rerank server: the Cohere/Jina `/v1/rerank` shape (vLLM serves it) or text-embeddings-inference's
`/rerank` shape."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request

RERANK_PATHS = {"cohere": "/v1/rerank", "tei": "/rerank"}


class HttpRerankError(RuntimeError):
    """The server failed, timed out or answered something that is not a rerank response."""


def rerank_url(base: str, api: str = "cohere") -> str:
    """Accept either the full endpoint or the server's base URL."""
    path = urllib.parse.urlsplit(base).path
    return base if path.rstrip("/").endswith("/rerank") else base.rstrip("/") + RERANK_PATHS[api]


def _as_probability(value: float) -> float:
    # Cohere/Jina/vLLM answer in [0, 1]; a server that returns a raw logit is mapped through the sigmoid.
    return value if 0.0 <= value <= 1.0 else 1.0 / (1.0 + math.exp(-value))


def parse_response(payload: bytes, n_documents: int) -> list[float | None]:
    """`{"results": [{"index": i, "relevance_score": s}, ...]}` (Cohere/Jina/vLLM) or `[{"index": i, "score": s}, ...]`
    (text-embeddings-inference) -> a score per document (None if not returned)."""
    try:
        data = json.loads(payload)
        tei = isinstance(data, list)
        results = data if tei else data["results"]
        scores: list[float | None] = [None] * n_documents
        for item in results:
            index, value = int(item["index"]), float(item["score" if tei else "relevance_score"])
            if not 0 <= index < n_documents or math.isnan(value):
                raise ValueError(f"bad result {item!r}")
            scores[index] = _as_probability(value)
    except (ValueError, KeyError, TypeError) as exc:
        raise HttpRerankError(f"malformed rerank response: {exc}") from None
    return scores


def request_body(api: str, model_name: str, query: str, docs: list[str]) -> dict[str, object]:
    if api == "tei":  # the server has one model; truncate rather than refuse a long pair
        return {"query": query, "texts": docs, "truncate": True}
    return {"model": model_name, "query": query, "documents": docs, "top_n": len(docs)}


class HttpScorer:
    """Posts `{model, query, documents, top_n}` (api "cohere") or `{query, texts}` (api "tei"); the server applies
    its own prompt template and instruction."""

    backend = "http"

    def __init__(self, url: str, model_name: str, api: str = "cohere") -> None:
        self.url, self.model_name, self.api = rerank_url(url, api), model_name, api

    def score(self, query: str, docs: list[str], timeout_s: float) -> list[float | None]:
        body = json.dumps(request_body(self.api, self.model_name, query, docs))
        request = urllib.request.Request(
            self.url, data=body.encode(), headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=max(timeout_s, 0.001)) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise HttpRerankError(f"{self.url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise HttpRerankError(f"{self.url} failed: {getattr(exc, 'reason', exc)}") from None
        return parse_response(payload, len(docs))

    def close(self) -> None:
        """Nothing held between requests."""
