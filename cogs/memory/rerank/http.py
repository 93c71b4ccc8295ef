"""Scoring through any `/v1/rerank` server (Cohere/Jina request and response shape; vLLM serves it)."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request

RERANK_PATH = "/v1/rerank"


class HttpRerankError(RuntimeError):
    """The server failed, timed out or answered something that is not a rerank response."""


def rerank_url(base: str) -> str:
    """Accept either the full endpoint or the server's base URL."""
    path = urllib.parse.urlsplit(base).path
    return base if path.rstrip("/").endswith("/rerank") else base.rstrip("/") + RERANK_PATH


def _as_probability(value: float) -> float:
    # Cohere/Jina/vLLM answer in [0, 1]; a server that returns a raw logit is mapped through the sigmoid.
    return value if 0.0 <= value <= 1.0 else 1.0 / (1.0 + math.exp(-value))


def parse_response(payload: bytes, n_documents: int) -> list[float | None]:
    """`{"results": [{"index": i, "relevance_score": s}, ...]}` -> a score per document (None if not returned)."""
    try:
        data = json.loads(payload)
        results = data["results"]
        scores: list[float | None] = [None] * n_documents
        for item in results:
            index, value = int(item["index"]), float(item["relevance_score"])
            if not 0 <= index < n_documents or math.isnan(value):
                raise ValueError(f"bad result {item!r}")
            scores[index] = _as_probability(value)
    except (ValueError, KeyError, TypeError) as exc:
        raise HttpRerankError(f"malformed rerank response: {exc}") from None
    return scores


class HttpScorer:
    """Posts `{model, query, documents, top_n}`; the server applies its own prompt template and instruction."""

    def __init__(self, url: str, model_name: str) -> None:
        self.url, self.model_name = rerank_url(url), model_name

    def score(self, query: str, docs: list[str], timeout_s: float) -> list[float | None]:
        body = json.dumps({"model": self.model_name, "query": query, "documents": docs, "top_n": len(docs)})
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
