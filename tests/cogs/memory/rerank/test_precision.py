"""Choosing the reranker's CPU precision: fidelity as numbers, the fastest backend within the bars wins, one outside
them is never picked, and the cached choice is reused (a corrupt cache is measured again). Speeds here are injected
(a fake clock each fake backend moves), never timed."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pytest

from cogs.memory.rerank import precision
from cogs.memory.rerank.calibration import CALIBRATION
from cogs.memory.rerank.fidelity import Fidelity, FidelityBars, kendall_tau, measure_fidelity
from cogs.memory.rerank.precision import (Measurement, PrecisionChoice, candidate_depth, choose, measure,
                                          select)
from cogs.memory.runtime.profile import ProfileError, RerankerSettings, parse_profile

GOOD = Fidelity(queries=3, pairs=24, max_abs_diff=0.01, min_kendall_tau=0.95, mean_kendall_tau=0.98,
                top1_agreement=1.0, top5_agreement=1.0)
BAD_ORDER = Fidelity(queries=3, pairs=24, max_abs_diff=0.01, min_kendall_tau=0.2, mean_kendall_tau=0.5,
                     top1_agreement=0.33, top5_agreement=0.6)


def test_kendall_tau_counts_agreeing_and_disagreeing_pairs() -> None:
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kendall_tau([1, 1, 1], [1, 1, 1]) == 1.0
    assert math.isnan(kendall_tau([1, 2], [1, math.nan]))


def test_fidelity_reports_the_worst_difference_and_top_agreement() -> None:
    reference = [[0.9, 0.8, 0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3]]
    scores = [[0.8, 0.9, 0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.35]]
    f = measure_fidelity(reference, scores)
    assert (f.queries, f.pairs, f.top1_agreement, f.top5_agreement) == (2, 9, 0.5, 1.0)
    assert f.max_abs_diff == pytest.approx(0.1)
    assert f.min_kendall_tau < 1.0 == kendall_tau(reference[1], scores[1])
    assert FidelityBars().misses(f) and not FidelityBars().misses(GOOD)


def test_the_fastest_precision_within_the_bars_wins() -> None:
    choice = choose([Measurement("float32", 5.0), Measurement("int8", 12.0, GOOD), Measurement("bf16", 9.0, GOOD)],
                    FidelityBars())
    assert (choice.precision, choice.rejected, choice.pairs_per_s) == ("int8", {}, 12.0)


def test_a_faster_precision_outside_the_bars_is_never_picked() -> None:
    choice = choose([Measurement("float32", 5.0), Measurement("int8", 50.0, BAD_ORDER), Measurement("bf16", 9.0, GOOD)],
                    FidelityBars())
    assert choice.precision == "bf16" and choice.pairs_per_s == 9.0
    broken = Fidelity(3, 24, math.nan, math.nan, math.nan, 1.0, 1.0)  # a backend that returned NaN scores
    assert choose([Measurement("float32", 5.0), Measurement("int8", 50.0, broken)], FidelityBars()).precision == \
        "float32"
    assert "min_kendall_tau 0.200 < 0.8" in choice.rejected["int8"]
    only_bad = choose([Measurement("float32", 5.0), Measurement("int8", 50.0, BAD_ORDER),
                       Measurement("bf16", skipped="no native bf16")], FidelityBars())
    assert (only_bad.precision, only_bad.rejected["bf16"]) == ("float32", "no native bf16")


class FakeBackend:
    """Scores the calibration set from a rule, and moves the shared fake clock by `seconds_per_pair` per pair."""

    def __init__(self, clock: dict[str, float], seconds_per_pair: float, reverse: bool) -> None:
        self.clock, self.seconds_per_pair, self.reverse = clock, seconds_per_pair, reverse
        self.closed = False

    def score(self, query: str, docs: list[str], instruction: str, batch_size: int,
              deadline: float | None = None) -> list[float | None]:
        self.clock["t"] += self.seconds_per_pair * len(docs)
        scores = [len(doc) / 200 for doc in docs]
        return [1.0 - s for s in scores] if self.reverse else list(scores)

    def close(self) -> None:
        self.closed = True


def test_a_deliberately_bad_backend_is_measured_fastest_and_still_not_picked() -> None:
    clock = {"t": 0.0}
    built: dict[str, FakeBackend] = {}

    loads: list[str] = []

    def build(name: str) -> FakeBackend | str:
        loads.append(name)
        if name == "bf16":
            return "no native bf16 on this CPU"
        built[name] = FakeBackend(clock, {"float32": 0.2, "int8": 0.01}[name], reverse=name == "int8")
        return built[name]

    measurements = measure(build, ["int8", "bf16", "float32"], "instruction", 8, clock=lambda: clock["t"])
    by = {m.precision: m for m in measurements}
    pairs = sum(len(docs) for _, docs in CALIBRATION)
    assert [m.precision for m in measurements] == ["float32", "int8", "bf16"]  # the reference first
    assert by["float32"].pairs_per_s == pytest.approx(pairs / (0.2 * pairs))
    assert by["int8"].pairs_per_s == pytest.approx(20 * by["float32"].pairs_per_s)
    assert by["int8"].fidelity is not None and by["int8"].fidelity.mean_kendall_tau < 0
    assert by["bf16"].skipped == "no native bf16 on this CPU"
    assert all(backend.closed for backend in built.values())  # one model loaded at a time
    assert loads == ["float32", "int8", "bf16", "int8", "float32"]  # the second round in reverse; bf16 said once
    assert choose(measurements, FidelityBars()).precision == "float32"


FIELDS: dict[str, object] = {"model": "m", "revision": "r", "cpu_features": ["avx2"]}


def counting_run(result: list[Measurement]) -> tuple[list[int], precision.Callable[[], list[Measurement]]]:
    calls: list[int] = []

    def run() -> list[Measurement]:
        calls.append(1)
        return result

    return calls, run


def test_the_choice_is_cached_and_a_restart_does_not_measure(tmp_path: Path) -> None:
    calls, run = counting_run([Measurement("float32", 5.0), Measurement("int8", 12.0, GOOD)])
    path = tmp_path / "precision-x.json"
    first = select(path, FIELDS, FidelityBars(), run)
    second = select(path, FIELDS, FidelityBars(), run)
    assert (len(calls), first.precision, first.cached, second.precision, second.cached) == (1, "int8", False,
                                                                                             "int8", True)
    assert second.measurements == first.measurements
    assert (path.stat().st_mode & 0o777) == 0o600


@pytest.mark.parametrize("content", ["{not json", '{"key": {"model": "m"}}', "",
                                     '{"key": null, "precision": "int8", "measurements": []}'])
def test_a_corrupt_cache_is_measured_again(tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "precision-x.json"
    path.write_text(content)
    calls, run = counting_run([Measurement("float32", 5.0), Measurement("int8", 12.0, GOOD)])
    with caplog.at_level(logging.WARNING):
        choice = select(path, FIELDS, FidelityBars(), run)
    assert (len(calls), choice.precision, choice.cached) == (1, "int8", False)
    assert "is unusable" in caplog.text and json.loads(path.read_text())["precision"] == "int8"


def test_a_cache_whose_choice_misses_todays_bars_is_measured_again(tmp_path: Path) -> None:
    """A cache file edited to name a backend its own measurements reject, or read under stricter bars."""
    path = tmp_path / "precision-x.json"
    calls, run = counting_run([Measurement("float32", 5.0), Measurement("int8", 12.0, BAD_ORDER)])
    select(path, FIELDS, FidelityBars(), run)
    data = json.loads(path.read_text())
    data["precision"] = "int8"
    path.write_text(json.dumps(data))
    assert select(path, FIELDS, FidelityBars(), run).precision == "float32" and len(calls) == 2


def test_depth_grows_with_the_measured_speed_within_the_profiles_bounds() -> None:
    settings = RerankerSettings(candidates=20, max_candidates=50, time_budget_ms=3000)
    assert candidate_depth(settings, None) == 20
    assert candidate_depth(settings, 4.0) == 20  # 9.6 fit: never below the profile's candidates
    assert candidate_depth(settings, 12.5) == 30  # 3 s x 0.8 x 12.5
    assert candidate_depth(settings, 100.0) == 50
    assert candidate_depth(RerankerSettings(candidates=20, max_candidates=0), 100.0) == 20


def test_the_choice_line_names_every_precision_and_why_it_lost() -> None:
    choice = choose([Measurement("float32", 5.0), Measurement("int8", 50.0, BAD_ORDER),
                     Measurement("bf16", skipped="no native bf16")], FidelityBars())
    line = choice.line()
    assert line.startswith("reranker precision float32 (measured): float32 5.00 pairs/s")
    assert "int8 50.00 pairs/s" in line and "rejected: min_kendall_tau" in line and "bf16 skipped" in line
    assert isinstance(choice, PrecisionChoice) and choice.short() == "float32 measured: 5.0 pairs/s (int8 50.0)"


def test_profile_precisions_are_checked() -> None:
    profile = parse_profile({"name": "t", "reranker": {"precisions": ["int8", "float32"], "max_candidates": 40}})
    assert (profile.reranker.precisions, profile.reranker.max_candidates) == (("int8", "float32"), 40)
    allowed = r"allowed: openvino-int8 \| openvino-bf16 \| int8 \| bf16 \| float32"
    with pytest.raises(ProfileError, match=rf"'reranker.precisions' holds 'fp8'; {allowed}"):
        parse_profile({"name": "t", "reranker": {"precisions": ["int8", "fp8"]}})
    with pytest.raises(ProfileError, match="an array of strings"):
        parse_profile({"name": "t", "reranker": {"precisions": "int8"}})
