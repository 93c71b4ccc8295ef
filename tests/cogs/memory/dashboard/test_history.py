"""The Performance history outlives a restart: what one dashboard recorded is written to the database (each minute
and at stop) and read back by the next one over the same store, for its own origin only."""

from __future__ import annotations

from pathlib import Path

from cogs.memory.dashboard.config import DashboardConfig
from cogs.memory.dashboard.server import Dashboard
from cogs.memory.metrics import MetricsRecorder, RecallSample
from tests.fixtures.dashboard import FakeSource


def recalls(recorder: MetricsRecorder) -> int:
    return sum(point.recalls for point in recorder.series("hour").points)


async def restarted(source: FakeSource, tmp_path: Path, origin: str = "bot") -> Dashboard:
    server = Dashboard(source, DashboardConfig(port=0, data_dir=tmp_path), MetricsRecorder(), history_origin=origin)
    await server.start()
    await server.keep_history()  # the sampler's first tick does this too
    return server


async def test_a_restarted_dashboard_shows_what_the_last_one_recorded(fake_source: FakeSource,
                                                                     tmp_path: Path) -> None:
    first = await restarted(fake_source, tmp_path)
    for ms in (10.0, 30.0, 50.0):
        first.recorder.record_recall(RecallSample(first_stage_ms=ms, rerank_ms=2 * ms, offered=20, scored=10))
    await first.stop()
    assert len(fake_source.kept_minutes) == 1  # one minute, no message text in it
    [figures] = fake_source.kept_minutes.values()
    assert '"recalls":3' in figures and "lake" not in figures

    second = await restarted(fake_source, tmp_path)
    try:
        assert recalls(second.recorder) == 3
        point = next(p for p in second.recorder.series("hour").points if p.recalls)
        assert (point.first_stage_p50_ms, point.first_stage_p95_ms, point.rerank_p95_ms) == (30.0, 50.0, 100.0)
    finally:
        await second.stop()
    standalone = await restarted(fake_source, tmp_path, origin="standalone")
    try:
        assert recalls(standalone.recorder) == 0  # the bot's history is the bot's
    finally:
        await standalone.stop()


async def test_nothing_is_written_before_the_history_is_read_back(fake_source: FakeSource, tmp_path: Path) -> None:
    server = Dashboard(fake_source, DashboardConfig(port=0, data_dir=tmp_path))
    server.recorder.record_recall(RecallSample(first_stage_ms=5.0))
    assert await server.history.keep() == 0 and fake_source.kept_minutes == {}
    assert await server.history.load() == 0 and await server.history.keep() == 1
