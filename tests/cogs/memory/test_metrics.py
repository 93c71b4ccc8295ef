"""The recall and ingest figures: the in-memory time series behind the dashboard's Performance page."""

from __future__ import annotations

from cogs.memory.metrics import DAY_BUCKETS, SAMPLES_PER_BUCKET, MetricsRecorder, RecallSample
from cogs.memory.records import Recall, RerankFigures

T = 1_700_000_100.0  # a five-minute boundary


class Clock:
    def __init__(self) -> None:
        self.now = T

    def __call__(self) -> float:
        return self.now


def test_the_hour_has_a_point_a_minute_with_its_percentiles() -> None:
    clock = Clock()
    recorder = MetricsRecorder(clock)
    for ms in range(1, 101):
        recorder.record_recall(RecallSample(first_stage_ms=float(ms), rerank_ms=2.0 * ms, offered=20, scored=10,
                                            cached=ms % 2))
    clock.now += 60
    recorder.record_recall(RecallSample(first_stage_ms=7.0))
    series = recorder.series("hour")
    assert len(series.points) == 60 and series.step_s == 60
    busy, last = series.points[-2], series.points[-1]
    assert (busy.recalls, busy.first_stage_p50_ms, busy.first_stage_p95_ms) == (100, 51.0, 96.0)
    assert (busy.rerank_p50_ms, busy.scored_per_recall, busy.cache_hit_rate) == (102.0, 10.0, 0.05)
    assert busy.rerank_ms_per_candidate == sum(2.0 * ms for ms in range(1, 101)) / 1000
    assert (last.recalls, last.first_stage_p50_ms, last.rerank_p50_ms) == (1, 7.0, None)
    assert all(point.recalls == 0 for point in series.points[:-2])


def test_the_day_merges_five_minutes_a_point_and_forgets_older_ones() -> None:
    clock = Clock()
    recorder = MetricsRecorder(clock)
    recorder.record_ingest(10, 5)
    clock.now += 60
    recorder.record_ingest(20, 3)
    day = recorder.series("day")
    assert len(day.points) == DAY_BUCKETS // 5
    point = next(p for p in day.points if p.ingest_per_min is not None)
    assert point.ingest_per_min == 30 * 60 / 300 and point.backlog == 3
    clock.now += 25 * 3600
    recorder.record_ingest(1, 0)
    assert sum(p.ingest_per_min or 0 for p in recorder.series("day").points) == 60 / 300


def test_a_bucket_keeps_a_bounded_number_of_latencies() -> None:
    recorder = MetricsRecorder(Clock())
    for _ in range(SAMPLES_PER_BUCKET + 500):
        recorder.record_recall(RecallSample(first_stage_ms=1.0))
    assert len(recorder._buckets[-1].first_stage_ms) == SAMPLES_PER_BUCKET
    assert recorder.series("hour").points[-1].recalls == SAMPLES_PER_BUCKET + 500


def test_a_recall_is_recorded_from_its_own_record() -> None:
    reranked = Recall((), candidates=20, first_stage_ms=12.0, total_ms=40.0,
                      rerank=RerankFigures(ms=28.0, offered=20, scored=15, cached=5, by="onnx float32"))
    first_stage_only = Recall((), candidates=3, first_stage_ms=9.0, total_ms=9.0)
    assert RecallSample.of(reranked) == RecallSample(12.0, 28.0, 20, 15, 5)
    assert RecallSample.of(first_stage_only) == RecallSample(9.0)
