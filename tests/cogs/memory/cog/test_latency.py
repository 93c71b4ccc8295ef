"""The cog's latencies come from each recall's own record: its whole time for /memory stats, both stages for the
dashboard's recorder when the bot keeps one."""

from __future__ import annotations

from cogs.memory.cog.latency import Latencies
from cogs.memory.metrics import MetricsRecorder
from cogs.memory.records import Recall, RerankFigures

RERANKED = Recall((), candidates=20, first_stage_ms=12.0, total_ms=40.0,
                  rerank=RerankFigures(ms=28.0, offered=20, scored=20, cached=0, by="torch float32"))
FIRST_STAGE_ONLY = Recall((), candidates=4, first_stage_ms=9.0, total_ms=9.0)


def test_searches_and_recalls_are_kept_apart_by_their_whole_time() -> None:
    latencies = Latencies()
    latencies.searched(RERANKED)
    latencies.recalled(FIRST_STAGE_ONLY)
    assert (list(latencies.search_ms), list(latencies.recall_ms)) == ([40.0], [9.0])


def test_the_recorder_gets_both_stages_of_each() -> None:
    recorder = MetricsRecorder()
    latencies = Latencies(recorder=recorder)
    latencies.searched(RERANKED)
    latencies.recalled(FIRST_STAGE_ONLY)
    [point] = [point for point in recorder.series("hour").points if point.recalls]
    assert (point.recalls, point.first_stage_p95_ms, point.rerank_p50_ms, point.scored_per_recall) == (
        2, 12.0, 28.0, 20.0)
