"""One provider of a profile's reranker chain (the local model or a rerank server): its backend once loaded, how
its load went, and how long it may take to answer."""

from __future__ import annotations

import threading
import time
from typing import Any

from .scorers import LocalBackend
from .http import HttpScorer
from ..runtime.profile import ProviderSettings

Backend = LocalBackend | HttpScorer
# How long an http provider may take when neither its own timeout nor the recall's budget says.
DEFAULT_HTTP_TIMEOUT_S = 30.0


class Provider:
    """A provider's state. Its load fields change under the service's lock (the load runs on the service's loader
    thread); once installed, the backend is used only on the service's worker thread."""

    def __init__(self, settings: ProviderSettings, model_name: str) -> None:
        self.settings = settings
        self.model_name = settings.model or model_name
        self.backend: Backend | None = None
        self.device: str | None = None
        self.load_error: str | None = None
        self.last_error: str | None = None
        self.loading = False
        self.settled = threading.Event()  # set once a load finished, either way
        self.tokenizer_settled = threading.Event()  # set once a load is past its tokenizer, either way

    @property
    def kind(self) -> str:
        return self.settings.provider

    @property
    def state(self) -> str:
        if self.backend is not None:
            return "loaded"
        if self.load_error is not None:
            return "unavailable"
        return "loading" if self.loading else "not loaded yet"

    @property
    def label(self) -> str:
        """What scores: "http" for a server, else the local backend and dtype ("onnx float32")."""
        backend = self.backend
        if backend is None or isinstance(backend, HttpScorer):
            return self.kind
        return f"{backend.backend} {backend.dtype}"

    def deadline(self, recall_deadline: float | None, now: float) -> float | None:
        """When this provider must have answered: its own timeout, cut short by what the recall's budget has left."""
        if not self.settings.timeout_ms:
            return recall_deadline
        own = now + self.settings.timeout_ms / 1000
        return own if recall_deadline is None else min(own, recall_deadline)

    def score(self, query: str, docs: list[str], instruction: str, batch_size: int,
              deadline: float | None) -> list[float | None]:
        """Scores from the installed backend (worker thread only); raises what the backend raises."""
        backend = self.backend
        if backend is None:
            return [None] * len(docs)
        if isinstance(backend, HttpScorer):
            timeout = DEFAULT_HTTP_TIMEOUT_S if deadline is None else deadline - time.monotonic()
            return [None] * len(docs) if timeout <= 0 else backend.score(query, docs, timeout)
        return backend.score(query, docs, instruction, batch_size, deadline)

    def describe(self) -> dict[str, Any]:
        backend = self.backend
        return {"provider": self.kind, "model": self.model_name, "state": self.state, "label": self.label,
                "backend": getattr(backend, "backend", None), "dtype": getattr(backend, "dtype", None),
                "device": self.device, "reason": self.load_error, "last_error": self.last_error,
                "timeout_ms": self.settings.timeout_ms}

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None
