"""What the reranker did per query over the last hour (time, candidates scored), for `/memory stats` and the CLI."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

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

    def summary(self) -> dict[str, Any]:
        """Queries in the window, p50/p95 ms per query, mean candidates offered and scored per recall, how many
        recalls each backend scored, the last one."""
        with self._lock:
            self._expire()
            samples = list(self._samples)
            last = self.last
        out: dict[str, Any] = {"queries_last_hour": len(samples), "p50_ms": None, "p95_ms": None,
                               "offered_per_recall": None, "scored_per_recall": None, "scored_by": {},
                               "last_query": None if last is None else asdict(last)}
        if samples:
            ordered = sorted(s.ms for s in samples)
            out.update(p50_ms=_percentile(ordered, 0.5), p95_ms=_percentile(ordered, 0.95),
                       offered_per_recall=sum(s.offered for s in samples) / len(samples),
                       scored_per_recall=sum(s.scored for s in samples) / len(samples))
            for sample in samples:
                if sample.scored and sample.by:
                    out["scored_by"][sample.by] = out["scored_by"].get(sample.by, 0) + 1
        return out
