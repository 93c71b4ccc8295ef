"""Which precision the CPU reranker runs in, chosen by measurement: every precision the profile allows is loaded in
turn, scores the fixed calibration set (./calibration.py), and is timed; float32 is the reference the others'
fidelity is measured against (./fidelity.py). The fastest one within the fidelity bars wins (float32 always
qualifies). The choice and its measurements are cached in a JSON file next to the ONNX exports, keyed by what
could change them (CPU features, model revision, library versions, threads, the allowed precisions, the bars, the
calibration set), so a restart does not measure again. Runs on the service's loader thread, never the event loop."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .calibration import CALIBRATION, CALIBRATION_VERSION
from .fidelity import Fidelity, FidelityBars, measure_fidelity
from .onnx_export import int8_variant, variant_settings
from ..runtime.profile import RERANKER_PRECISIONS, RerankerSettings

log = logging.getLogger(__name__)

REFERENCE = "float32"
PRECISIONS = RERANKER_PRECISIONS
CACHE_FORMAT = 1
# Timed passes over the calibration set per precision (after an untimed one): the best is kept.
TIMED_PASSES = 2
# Rounds over every precision, the order reversed each round (see `measure`).
ROUNDS = 2
# Share of the time budget that the measured speed may fill when the depth grows past `candidates`.
DEPTH_MARGIN = 0.8


class CalibrationScorer(Protocol):
    """What a measured backend offers (LocalScorer and OnnxScorer do)."""

    def score(self, query: str, docs: list[str], instruction: str, batch_size: int,
              deadline: float | None = None) -> list[float | None]: ...

    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Measurement:
    """One precision on this machine: its speed on the calibration set, its fidelity to float32 (None for float32
    itself), or why it was not measured (`skipped`)."""

    precision: str
    pairs_per_s: float = 0.0
    fidelity: Fidelity | None = None
    skipped: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"precision": self.precision, "pairs_per_s": self.pairs_per_s, "skipped": self.skipped,
                "fidelity": None if self.fidelity is None else self.fidelity.as_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Measurement:
        fidelity = data["fidelity"]
        skipped = data["skipped"]
        pairs_per_s = data["pairs_per_s"]
        if not isinstance(fidelity, dict | None) or not isinstance(skipped, str | None) \
                or not isinstance(pairs_per_s, int | float) or data["precision"] not in PRECISIONS:
            raise ValueError(f"a malformed measurement: {data!r}")
        return cls(str(data["precision"]), float(pairs_per_s),
                   None if fidelity is None else Fidelity(**fidelity), skipped)


@dataclass(frozen=True, slots=True)
class PrecisionChoice:
    """The precision chosen, what every allowed precision measured, and why the faster ones were not taken."""

    precision: str
    measurements: tuple[Measurement, ...]
    rejected: dict[str, str] = field(default_factory=dict)  # precision -> the bars it missed, or why it was skipped
    cached: bool = False

    @property
    def pairs_per_s(self) -> float:
        return next(m.pairs_per_s for m in self.measurements if m.precision == self.precision)

    def short(self) -> str:
        """For the stats: the choice, its speed and the others' ("int8 measured: 14.2 pairs/s; float32 6.1")."""
        others = [f"{m.precision} {m.pairs_per_s:.1f}" for m in self.measurements
                  if m.precision != self.precision and m.skipped is None]
        return (f"{self.precision} {'cached' if self.cached else 'measured'}: {self.pairs_per_s:.1f} pairs/s"
                + ("" if not others else f" ({', '.join(others)})"))

    def line(self) -> str:
        """One line for the log and the status: the choice, each precision's speed and fidelity, where from."""
        parts = []
        for m in self.measurements:
            if m.skipped is not None:
                parts.append(f"{m.precision} skipped ({m.skipped})")
                continue
            text = f"{m.precision} {m.pairs_per_s:.2f} pairs/s"
            if m.fidelity is not None:
                f = m.fidelity
                text += f" (max |Δ| {f.max_abs_diff:.3g}, τ min {f.min_kendall_tau:.3f}, top-1 {f.top1_agreement:.2f})"
            if m.precision in self.rejected and m.skipped is None:
                text += f" rejected: {self.rejected[m.precision]}"
            parts.append(text)
        where = "cached" if self.cached else "measured"
        return f"reranker precision {self.precision} ({where}): " + "; ".join(parts)


def choose(measurements: Sequence[Measurement], bars: FidelityBars) -> PrecisionChoice:
    """The fastest measured precision whose fidelity meets `bars`; float32, the reference, always qualifies, and is
    the answer when nothing else does."""
    rejected: dict[str, str] = {}
    eligible = []
    for m in measurements:
        if m.skipped is not None:
            rejected[m.precision] = m.skipped
        elif m.precision == REFERENCE:
            eligible.append(m)
        elif m.fidelity is None:
            rejected[m.precision] = "no fidelity measured"
        elif misses := bars.misses(m.fidelity):
            rejected[m.precision] = ", ".join(misses)
        elif math.isfinite(m.pairs_per_s) and m.pairs_per_s > 0:
            eligible.append(m)
        else:
            rejected[m.precision] = f"speed {m.pairs_per_s}"
    best = max(eligible, key=lambda m: m.pairs_per_s, default=None)
    return PrecisionChoice(REFERENCE if best is None else best.precision, tuple(measurements), rejected)


def measure(build: Callable[[str], CalibrationScorer | str], allowed: Sequence[str], instruction: str,
            batch_size: int, clock: Callable[[], float] = time.perf_counter) -> list[Measurement]:
    """Load each precision in turn (float32 first: the reference), score the calibration set untimed, then time
    TIMED_PASSES passes. This runs ROUNDS times, the order reversed each round, and each precision keeps its fastest
    pass: a burst of other work at start (the embedder loading, a catch-up) then slows one round, not the choice.
    `build` returns a scorer, or a string saying why that precision cannot run here. One model is loaded at a
    time, so the peak memory is the largest one's."""
    order = [REFERENCE] + [p for p in allowed if p != REFERENCE]
    pairs = sum(len(docs) for _, docs in CALIBRATION)
    scores: dict[str, list[list[float]]] = {}
    best: dict[str, float] = {}
    skipped: dict[str, str] = {}
    for round_ in range(ROUNDS):
        for precision in order if round_ % 2 == 0 else order[::-1]:
            if precision in skipped:
                continue
            scorer = build(precision)
            if isinstance(scorer, str):
                if precision == REFERENCE:
                    raise RuntimeError(f"the float32 reference cannot run: {scorer}")
                skipped[precision] = scorer
                continue
            try:
                scores.setdefault(precision, _scores(scorer, instruction, batch_size))
                for _ in range(TIMED_PASSES):
                    started = clock()
                    _scores(scorer, instruction, batch_size)
                    best[precision] = min(best.get(precision, math.inf), clock() - started)
            finally:
                scorer.close()
    out = []
    for precision in order:
        if precision in skipped:
            out.append(Measurement(precision, skipped=skipped[precision]))
            continue
        seconds = best[precision]
        fidelity = None if precision == REFERENCE else measure_fidelity(scores[REFERENCE], scores[precision])
        out.append(Measurement(precision, pairs / seconds if seconds > 0 else math.inf, fidelity))
    return out


def _scores(scorer: CalibrationScorer, instruction: str, batch_size: int) -> list[list[float]]:
    out = []
    for query, docs in CALIBRATION:
        scores = scorer.score(query, list(docs), instruction, batch_size)
        out.append([math.nan if s is None else s for s in scores])
    return out


def cache_key(fields: dict[str, object]) -> str:
    """A short hash of everything the measurement depends on."""
    text = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def key_fields(model_name: str, revision: str, cpu_features: Sequence[str], threads: int, allowed: Sequence[str],
               bars: FidelityBars, backend: str) -> dict[str, object]:
    """What a cached choice is valid for: another CPU, model revision, library version, thread count, allowed list,
    bars, calibration set or way of making the int8 export (a choice measured on the dynamic int8 says nothing of
    the block-wise one) means measuring again."""
    variant = int8_variant(tuple(cpu_features))
    return {"format": CACHE_FORMAT, "model": model_name, "revision": revision, "cpu_features": sorted(cpu_features),
            "threads": threads, "allowed": sorted(allowed), "bars": bars.as_dict(), "backend": backend,
            "calibration": CALIBRATION_VERSION, "libraries": _library_versions(),
            "int8_export": {"variant": variant, **variant_settings(variant)}}


def _library_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("torch", "onnxruntime", "openvino", "transformers"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def cache_path(root: Path, fields: dict[str, object]) -> Path:
    return root / f"precision-{cache_key(fields)}.json"


def read_cached(path: Path, fields: dict[str, object], bars: FidelityBars) -> PrecisionChoice | None:
    """The choice cached at `path` for exactly `fields`, or None (missing, or unreadable: said once and removed)."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data["key"] != fields:
            raise ValueError("it was measured for other settings")
        measurements = [Measurement.from_dict(m) for m in data["measurements"]]
        choice = choose(measurements, bars)
        if choice.precision != data["precision"]:
            raise ValueError(f"it names {data['precision']!r} where its measurements give {choice.precision!r}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("reranker precision cache %s is unusable (%s: %s); measuring again", path,
                    type(exc).__name__, exc)
        path.unlink(missing_ok=True)
        return None
    return PrecisionChoice(choice.precision, choice.measurements, choice.rejected, cached=True)


def write_cached(path: Path, fields: dict[str, object], choice: PrecisionChoice) -> None:
    """Write the cache file whole or not at all (a temporary file renamed into place), private to the bot."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = {"key": fields, "precision": choice.precision,
            "measurements": [m.as_dict() for m in choice.measurements], "measured_at": time.time()}
    staging = path.with_suffix(f".{os.getpid()}.tmp")
    with open(os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    staging.replace(path)


def select(path: Path, fields: dict[str, object], bars: FidelityBars,
           run: Callable[[], list[Measurement]]) -> PrecisionChoice:
    """The cached choice for `fields`, or measure (`run`), choose, cache it. Logged in one line either way."""
    choice = read_cached(path, fields, bars)
    if choice is None:
        choice = choose(run(), bars)
        try:
            write_cached(path, fields, choice)
        except OSError as exc:
            log.warning("could not cache the reranker precision in %s (%s); the next start measures again", path, exc)
    log.info("%s", choice.line())
    return choice


def candidate_depth(settings: RerankerSettings, pairs_per_s: float | None) -> int:
    """Candidates a recall offers: `candidates`, grown up to `max_candidates` by what the measured speed scores
    within the time budget (DEPTH_MARGIN of it: a recall also waits in the queue and varies with load)."""
    if not settings.max_candidates or pairs_per_s is None or not settings.time_budget_ms:
        return settings.candidates
    fits = int(pairs_per_s * settings.time_budget_ms / 1000 * DEPTH_MARGIN)
    return max(settings.candidates, min(settings.max_candidates, fits))


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()
