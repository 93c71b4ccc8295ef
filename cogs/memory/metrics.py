"""Recall and ingest figures over the last day: a small in-memory time series (the dashboard's Performance page),
and the same figures as Prometheus metrics (its /metrics).

Below the surfaces that record and read it: the Discord surface and the dashboard record each ``Recall`` they make,
the dashboard samples ingest and reads the series. They call ``MetricsRecorder.record_recall`` / ``record_ingest``
from the event loop; nothing here blocks. One-minute buckets, a day of them, each keeping at most
``SAMPLES_PER_BUCKET`` latencies.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .records import Recall

__all__ = ("Minute", "MetricsRecorder", "PerfPoint", "PerformanceSeries", "RecallSample", "Window", "build_series",
           "minute_figures", "minute_from_figures")

Window = Literal["hour", "day"]
BUCKET_S = 60.0
DAY_BUCKETS = 24 * 60
SAMPLES_PER_BUCKET = 1000
# The day's plot merges five one-minute buckets per point: 288 points, as many as the hour's 60 would be unreadable.
STEP_BUCKETS: dict[Window, int] = {"hour": 1, "day": 5}
SPAN_BUCKETS: dict[Window, int] = {"hour": 60, "day": DAY_BUCKETS}
# Latencies a minute keeps when written to the database (its quantiles, evenly spaced): a row stays small.
KEPT_SAMPLES = 100
LATENCY_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class RecallSample:
    """One recall: first-stage ms, rerank ms (None when nothing reranked), candidates offered/scored/from cache."""

    first_stage_ms: float
    rerank_ms: float | None = None
    offered: int = 0
    scored: int = 0
    cached: int = 0

    @classmethod
    def of(cls, recall: Recall) -> RecallSample:
        """What ``recall`` took, as its own record says."""
        figures = recall.rerank
        if figures is None:
            return cls(recall.first_stage_ms)
        return cls(recall.first_stage_ms, figures.ms, figures.offered, figures.scored, figures.cached)


@dataclass(slots=True)
class _Bucket:
    start: float
    first_stage_ms: list[float] = field(default_factory=list)
    rerank_ms: list[float] = field(default_factory=list)
    recalls: int = 0
    reranked: int = 0
    scored: int = 0
    cached: int = 0
    rerank_total_ms: float = 0.0
    ingested: int = 0
    backlog: int | None = None


Minute = _Bucket  # a minute's figures, as the database keeps them (minute_figures) and reads them back


@dataclass(frozen=True, slots=True)
class PerfPoint:
    """One plotted step; None where nothing happened in it."""

    start: float  # unix time
    recalls: int
    first_stage_p50_ms: float | None
    first_stage_p95_ms: float | None
    rerank_p50_ms: float | None
    rerank_p95_ms: float | None
    rerank_ms_per_candidate: float | None
    scored_per_recall: float | None
    cache_hit_rate: float | None
    ingest_per_min: float | None
    backlog: int | None


@dataclass(frozen=True, slots=True)
class PerformanceSeries:
    window: Window
    step_s: float
    points: tuple[PerfPoint, ...]


def _percentile(values: Sequence[float], fraction: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)]


def _merged(buckets: Iterable[_Bucket], start: float, step_s: float) -> PerfPoint:
    first, rerank = [], []
    recalls = reranked = scored = cached = ingested = 0
    rerank_ms, backlog = 0.0, None
    for bucket in buckets:
        first += bucket.first_stage_ms
        rerank += bucket.rerank_ms
        recalls, reranked = recalls + bucket.recalls, reranked + bucket.reranked
        scored, cached = scored + bucket.scored, cached + bucket.cached
        rerank_ms, ingested = rerank_ms + bucket.rerank_total_ms, ingested + bucket.ingested
        backlog = bucket.backlog if bucket.backlog is not None else backlog
    return PerfPoint(
        start=start, recalls=recalls,
        first_stage_p50_ms=_percentile(first, 0.5), first_stage_p95_ms=_percentile(first, 0.95),
        rerank_p50_ms=_percentile(rerank, 0.5), rerank_p95_ms=_percentile(rerank, 0.95),
        rerank_ms_per_candidate=rerank_ms / scored if scored else None,
        scored_per_recall=scored / reranked if reranked else None,
        cache_hit_rate=cached / scored if scored else None,
        ingest_per_min=ingested * 60.0 / step_s if backlog is not None else None,  # sampled in this step
        backlog=backlog,
    )


class MetricsRecorder:
    """Owned by the event loop: the recall and ingest paths record, the dashboard reads."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._buckets: deque[_Bucket] = deque(maxlen=DAY_BUCKETS)
        self.registry = CollectorRegistry(auto_describe=True)
        self._first_stage = Histogram("memory_recall_first_stage_seconds", "First-stage (hybrid search) latency",
                                      registry=self.registry, buckets=LATENCY_BUCKETS_S)
        self._rerank = Histogram("memory_recall_rerank_seconds", "Reranker latency per recall",
                                 registry=self.registry, buckets=LATENCY_BUCKETS_S)
        self._scored = Counter("memory_rerank_candidates_scored", "Candidates the reranker scored",
                               registry=self.registry)
        self._cached = Counter("memory_rerank_cache_hits", "Candidates scored from the reranker's score cache",
                               registry=self.registry)
        self._ingested = Counter("memory_ingested_messages", "Messages stored", registry=self.registry)
        self._backlog = Gauge("memory_ingest_backlog", "Messages waiting to be stored or embedded",
                              registry=self.registry)

    def _bucket(self) -> _Bucket:
        start = self._clock() // BUCKET_S * BUCKET_S
        if not self._buckets or self._buckets[-1].start < start:
            self._buckets.append(_Bucket(start))
        return self._buckets[-1]

    def record_recall(self, sample: RecallSample) -> None:
        bucket = self._bucket()
        bucket.recalls += 1
        if len(bucket.first_stage_ms) < SAMPLES_PER_BUCKET:
            bucket.first_stage_ms.append(sample.first_stage_ms)
        self._first_stage.observe(sample.first_stage_ms / 1000)
        if sample.rerank_ms is None:
            return
        bucket.reranked += 1
        bucket.scored, bucket.cached = bucket.scored + sample.scored, bucket.cached + sample.cached
        bucket.rerank_total_ms += sample.rerank_ms
        if len(bucket.rerank_ms) < SAMPLES_PER_BUCKET:
            bucket.rerank_ms.append(sample.rerank_ms)
        self._rerank.observe(sample.rerank_ms / 1000)
        self._scored.inc(sample.scored)
        self._cached.inc(sample.cached)

    def record_ingest(self, stored: int, backlog: int) -> None:
        """``stored`` messages were stored since the last call; ``backlog`` wait now."""
        bucket = self._bucket()
        bucket.ingested += max(stored, 0)
        bucket.backlog = backlog
        self._ingested.inc(max(stored, 0))
        self._backlog.set(backlog)

    def series(self, window: Window) -> PerformanceSeries:
        """The last hour (one point a minute) or day (one point per five minutes), oldest first, gaps included."""
        return build_series(list(self._buckets), window, self._clock())

    def now(self) -> float:
        return self._clock()

    def minutes_from(self, start: float) -> list[_Bucket]:
        """Copies of the minutes from ``start`` on (the current one included, as far as it has come), to be written
        to the database off the loop."""
        return [_Bucket(b.start, list(b.first_stage_ms), list(b.rerank_ms), b.recalls, b.reranked, b.scored,
                        b.cached, b.rerank_total_ms, b.ingested, b.backlog)
                for b in self._buckets if b.start >= start]

    def restore(self, minutes: Iterable[_Bucket]) -> int:
        """Put minutes read back from the database (the last day's) among those recorded since this process
        started; a minute both hold (a restart within it) adds the two. Returns how many were read back."""
        oldest = self._clock() - DAY_BUCKETS * BUCKET_S
        own = {bucket.start: bucket for bucket in self._buckets}
        restored = 0
        for minute in minutes:
            if minute.start <= oldest:
                continue
            restored += 1
            mine = own.get(minute.start)
            if mine is None:
                own[minute.start] = minute
                continue
            mine.first_stage_ms[:0] = minute.first_stage_ms[: SAMPLES_PER_BUCKET - len(mine.first_stage_ms)]
            mine.rerank_ms[:0] = minute.rerank_ms[: SAMPLES_PER_BUCKET - len(mine.rerank_ms)]
            mine.recalls, mine.reranked = mine.recalls + minute.recalls, mine.reranked + minute.reranked
            mine.scored, mine.cached = mine.scored + minute.scored, mine.cached + minute.cached
            mine.rerank_total_ms += minute.rerank_total_ms
            mine.ingested += minute.ingested
            mine.backlog = mine.backlog if mine.backlog is not None else minute.backlog
        self._buckets = deque(sorted(own.values(), key=lambda bucket: bucket.start)[-DAY_BUCKETS:],
                              maxlen=DAY_BUCKETS)
        return restored

    async def series_off_loop(self, window: Window) -> PerformanceSeries:
        """``series`` computed on a worker thread (a day is ~10 ms of Python): the buckets are listed here, on the
        loop that owns them; a sample recorded meanwhile may or may not be counted."""
        return await asyncio.to_thread(build_series, list(self._buckets), window, self._clock())


def _quantiles(values: Sequence[float], count: int = KEPT_SAMPLES) -> list[float]:
    """``values`` as at most ``count`` of its order statistics, evenly spaced (the lowest and highest kept)."""
    ordered = sorted(values)
    if len(ordered) <= count:
        return [round(v, 3) for v in ordered]
    return [round(ordered[round(i * (len(ordered) - 1) / (count - 1))], 3) for i in range(count)]


def minute_figures(bucket: _Bucket) -> str:
    """A minute as the database keeps it (JSON: counts, and its latencies' quantiles; no message text)."""
    return json.dumps({"first_stage_ms": _quantiles(bucket.first_stage_ms), "rerank_ms": _quantiles(bucket.rerank_ms),
                       "recalls": bucket.recalls, "reranked": bucket.reranked, "scored": bucket.scored,
                       "cached": bucket.cached, "rerank_total_ms": round(bucket.rerank_total_ms, 3),
                       "ingested": bucket.ingested, "backlog": bucket.backlog}, separators=(",", ":"))


def minute_from_figures(start: float, figures: str) -> _Bucket:
    data = json.loads(figures)
    return _Bucket(start, [float(v) for v in data["first_stage_ms"]], [float(v) for v in data["rerank_ms"]],
                   int(data["recalls"]), int(data["reranked"]), int(data["scored"]), int(data["cached"]),
                   float(data["rerank_total_ms"]), int(data["ingested"]),
                   None if data["backlog"] is None else int(data["backlog"]))


def build_series(buckets: Sequence[_Bucket], window: Window, now: float) -> PerformanceSeries:
    step = STEP_BUCKETS[window]
    step_s = step * BUCKET_S
    last = now // step_s * step_s
    first = last - (SPAN_BUCKETS[window] // step - 1) * step_s
    grouped: dict[float, list[_Bucket]] = {}
    for bucket in buckets:
        if bucket.start >= first:
            grouped.setdefault(bucket.start // step_s * step_s, []).append(bucket)
    points = []
    start = first
    while start <= last:
        points.append(_merged(grouped.get(start, ()), start, step_s))
        start += step_s
    return PerformanceSeries(window, step_s, tuple(points))
