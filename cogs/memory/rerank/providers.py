"""One provider of a profile's reranker chain (the local model or a rerank server): its backend once loaded, how
its load went, and how long it may take to answer."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from .scorers import LocalBackend
from .http import HttpScorer
from .precision import PrecisionChoice
from ..runtime.profile import ProviderSettings

Backend = LocalBackend | HttpScorer
# How long an http provider may take when neither its own timeout nor the recall's budget says.
DEFAULT_HTTP_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One provider as `status()` reports it: its kind ("local", "http"), model, load state ("loaded", "loading",
    "not loaded yet", "unavailable") and why, what scores ("onnx float32", "http"), and its last scoring error."""

    provider: str
    model: str
    state: str
    label: str
    backend: str | None
    dtype: str | None
    device: str | None
    reason: str | None
    last_error: str | None
    timeout_ms: int


class Provider:
    """A provider's state. Its load fields change under the service's lock (the load runs on the service's loader
    thread); once installed, the backend is used only on the service's worker thread."""

    def __init__(self, settings: ProviderSettings, model_name: str) -> None:
        self.settings = settings
        self.model_name = settings.model or model_name
        self.backend: Backend | None = None
        self.device: str | None = None
        self.load_error: str | None = None
        self.precision: PrecisionChoice | None = None  # how the precision was chosen, where it was measured
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

    def describe(self) -> ProviderStatus:
        backend = self.backend
        return ProviderStatus(self.kind, self.model_name, self.state, self.label, getattr(backend, "backend", None),
                              getattr(backend, "dtype", None), self.device, self.load_error, self.last_error,
                              self.settings.timeout_ms)

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None
