"""What the reranker did per query over the last hour (time, candidates scored), for `/memory stats` and the CLI."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

WINDOW_S = 3600.0


@dataclass(frozen=True, slots=True)
class QueryRerank:
    """One query's reranking: wall time at the scorer, candidates offered, scored (cached ones included), cached,
    and what scored them ("onnx float32", "http", ...)."""

    at: float
    ms: float
    offered: int
    scored: int
    cached: int
    by: str = ""


@dataclass(frozen=True, slots=True)
class RerankSummary:
    """The last hour's reranking: queries, p50/p95 ms per query, mean candidates offered and scored per recall (None
    without queries), how many recalls each backend scored, and the last query (kept past the hour)."""

    queries_last_hour: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    offered_per_recall: float | None = None
    scored_per_recall: float | None = None
    scored_by: Mapping[str, int] = field(default_factory=dict)
    last_query: QueryRerank | None = None


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


class RerankStats:
    """Written by the reranker's worker thread, read from the event loop; a lock keeps the two apart."""

    def __init__(self, window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self._clock = window_s, clock
        self._samples: deque[QueryRerank] = deque()
        self._lock = threading.Lock()
        self.last: QueryRerank | None = None

    def record(self, ms: float, offered: int, scored: int, cached: int, by: str = "") -> QueryRerank:
        sample = QueryRerank(self._clock(), ms, offered, scored, cached, by)
        with self._lock:
            self._samples.append(sample)
            self.last = sample
            self._expire()
        return sample

    def _expire(self) -> None:
        horizon = self._clock() - self.window_s
        while self._samples and self._samples[0].at < horizon:
            self._samples.popleft()

    def summary(self) -> RerankSummary:
        """Queries in the window, p50/p95 ms per query, mean candidates offered and scored per recall, how many
        recalls each backend scored, the last one."""
        with self._lock:
            self._expire()
            samples = list(self._samples)
            last = self.last
        if not samples:
            return RerankSummary(last_query=last)
        ordered = sorted(s.ms for s in samples)
        scored_by: dict[str, int] = {}
        for sample in samples:
            if sample.scored and sample.by:
                scored_by[sample.by] = scored_by.get(sample.by, 0) + 1
        return RerankSummary(len(samples), _percentile(ordered, 0.5), _percentile(ordered, 0.95),
                             sum(s.offered for s in samples) / len(samples),
                             sum(s.scored for s in samples) / len(samples), scored_by, last)
