"""The service measures the precisions its profile allows once, on its loader thread, runs the one chosen, says so
in its status, and a second start reuses the cached choice; a corrupt cache is measured again. On the tiny random
Qwen3 (real tokenizer) with ONNX Runtime fp32 and int8 and torch bf16. Which precision wins depends on this machine's
speed, so the test checks only that the winner is one that met the bars."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogs.memory.rerank import scorers
from cogs.memory.rerank.fidelity import FidelityBars
from cogs.memory.rerank.precision import Measurement
from cogs.memory.rerank.service import RerankerService
from cogs.memory.runtime.profile import MemoryProfile
from tests.cogs.memory.rerank.test_service import QUERY, candidates
from tests.fixtures.reranker import rerank_results, with_reranker

LABELS = {"float32": "onnx float32", "int8": "onnx int8", "bf16": "torch bfloat16"}


@pytest.fixture
def measured_profile(tiny_reranker_profile: MemoryProfile) -> MemoryProfile:
    return with_reranker(tiny_reranker_profile, backend="onnx", precisions=("int8", "bf16", "float32"))


@pytest.fixture
def measurements(monkeypatch: pytest.MonkeyPatch) -> list[list[Measurement]]:
    """Every measurement the service runs (a spy around the real one)."""
    runs: list[list[Measurement]] = []
    real = scorers.measure

    def spy(*args: object, **kwargs: object) -> list[Measurement]:
        runs.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return runs[-1]

    monkeypatch.setattr(scorers, "measure", spy)
    return runs


def loaded(profile: MemoryProfile, export_dir: Path) -> RerankerService:
    service = RerankerService(profile, export_dir=export_dir)
    assert service.load()
    return service


def test_the_precision_is_measured_once_and_the_cache_reused(
        measured_profile: MemoryProfile, tmp_path: Path, measurements: list[list[Measurement]]) -> None:
    service = loaded(measured_profile, tmp_path)
    try:
        status = service.status()
        scored = rerank_results(service, QUERY, candidates())
    finally:
        service.close()
    assert len(measurements) == 1
    by = {m.precision: m for m in measurements[0]}
    assert set(by) == {"float32", "int8", "bf16"} and by["float32"].pairs_per_s > 0
    winners = [name for name, m in by.items() if name == "float32" or (
        m.skipped is None and m.fidelity is not None and not FidelityBars().misses(m.fidelity))]
    chosen = next(name for name, label in LABELS.items() if status.providers[0].label == label)
    assert chosen in winners and max(winners, key=lambda n: by[n].pairs_per_s) == chosen
    assert status.precision is not None and status.precision.startswith(f"{chosen} measured:")
    assert all(hit.rerank_score is not None for hit in scored)
    cache_files = list(tmp_path.glob("precision-*.json"))
    assert len(cache_files) == 1

    again = loaded(measured_profile, tmp_path)
    try:
        assert len(measurements) == 1  # a restart reads the choice instead of measuring
        assert again.status().precision is not None and again.status().providers[0].label == LABELS[chosen]
        assert (again.status().precision or "").startswith(f"{chosen} cached:")
    finally:
        again.close()

    cache_files[0].write_text('{"key": ')
    third = loaded(measured_profile, tmp_path)
    third.close()
    assert len(measurements) == 2  # the corrupt file was measured again


def test_without_precisions_nothing_is_measured(tiny_reranker_profile: MemoryProfile, tmp_path: Path,
                                                measurements: list[list[Measurement]]) -> None:
    service = loaded(tiny_reranker_profile, tmp_path)
    try:
        status = service.status()
    finally:
        service.close()
    assert (measurements, status.precision, status.providers[0].label) == ([], None, "torch float32")
    assert status.depth == tiny_reranker_profile.reranker.candidates


def test_injected_measurements_decide_the_backend_and_the_depth(
        measured_profile: MemoryProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fastest within the bars runs (int8 here), a faster one outside them (bf16, its order reversed) does not,
    and the measured speed grows the candidates offered up to max_candidates."""
    from tests.cogs.memory.rerank.test_precision import BAD_ORDER, GOOD

    fake = [Measurement("float32", 5.0), Measurement("int8", 40.0, GOOD), Measurement("bf16", 80.0, BAD_ORDER)]
    monkeypatch.setattr(scorers, "measure", lambda *args, **kwargs: fake)
    profile = with_reranker(measured_profile, candidates=20, max_candidates=50, time_budget_ms=3000)
    service = loaded(profile, tmp_path)
    try:
        status = service.status()
        offered = service.score(QUERY, [f"message number {n}" for n in range(60)]).offered
    finally:
        service.close()
    assert (status.providers[0].label, status.depth, offered) == ("onnx int8", 50, 50)
    assert status.precision == "int8 measured: 40.0 pairs/s (float32 5.0, bf16 80.0)"
