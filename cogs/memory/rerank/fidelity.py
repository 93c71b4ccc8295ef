"""How far a reranker backend's scores are from the float32 reference, as numbers: the largest |Δ score|, each query's
Kendall τ of the candidate order, and top-1 / top-5 agreement; and the bars a backend must meet to be chosen
(docs/reranker.md says why these values)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

# What recall shows: the profiles' top_k is 5, so the top-5 set is what a member sees.
TOP_K = 5


@dataclass(frozen=True, slots=True)
class Fidelity:
    """A backend's scores against the reference's, over `queries` queries of several candidates each."""

    queries: int
    pairs: int
    max_abs_diff: float  # the largest |score - reference| over every pair
    min_kendall_tau: float  # the worst query's τ-b of the candidate order
    mean_kendall_tau: float
    top1_agreement: float  # share of queries whose best candidate is the reference's
    top5_agreement: float  # mean share of the reference's top 5 also in the backend's top 5

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class FidelityBars:
    """What a backend other than float32 must meet to be picked (defaults: docs/reranker.md, "Precision")."""

    max_abs_diff: float = 0.05
    min_kendall_tau: float = 0.8
    mean_kendall_tau: float = 0.9
    top1_agreement: float = 0.9
    top5_agreement: float = 0.9

    def misses(self, fidelity: Fidelity) -> list[str]:
        """The bars `fidelity` misses, each said with its value ([] when it meets them all)."""
        out = []
        if not fidelity.max_abs_diff <= self.max_abs_diff:  # written so that NaN misses
            out.append(f"max |Δ score| {fidelity.max_abs_diff:.3g} > {self.max_abs_diff:g}")
        for name in ("min_kendall_tau", "mean_kendall_tau", "top1_agreement", "top5_agreement"):
            value, bar = getattr(fidelity, name), getattr(self, name)
            if not value >= bar:
                out.append(f"{name} {value:.3f} < {bar:g}")
        return out

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's τ-b of two scorings of the same items (ties counted as neither agreeing nor disagreeing); 1.0 when
    either scoring is constant and they do not disagree (a single candidate, or all tied). NaN scores give NaN."""
    if len(a) != len(b):
        raise ValueError(f"{len(a)} scores against {len(b)}")
    if any(math.isnan(x) for x in (*a, *b)):
        return math.nan
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b))
    return 1.0 if denominator == 0 else (concordant - discordant) / denominator


def _top(scores: Sequence[float], k: int) -> list[int]:
    """Indices of the k best scores, best first (ties: the earlier candidate, as a stable sort keeps them)."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])[:k]


def measure_fidelity(reference: Sequence[Sequence[float]], scores: Sequence[Sequence[float]]) -> Fidelity:
    """`scores` (one list per query, in the reference's candidate order) against `reference`."""
    if len(reference) != len(scores) or not reference:
        raise ValueError(f"{len(scores)} queries scored against {len(reference)} reference queries")
    taus: list[float] = []
    diffs: list[float] = []
    top1, top5 = 0, []
    for ref, got in zip(reference, scores, strict=True):
        taus.append(kendall_tau(ref, got))
        diffs += [abs(x - y) for x, y in zip(ref, got, strict=True)]
        top1 += _top(ref, 1) == _top(got, 1)
        k = min(TOP_K, len(ref))
        top5.append(len(set(_top(ref, k)) & set(_top(got, k))) / k)
    nan = any(math.isnan(t) for t in taus)
    return Fidelity(
        queries=len(reference), pairs=len(diffs), max_abs_diff=math.nan if nan else max(diffs),
        min_kendall_tau=math.nan if nan else min(taus), mean_kendall_tau=math.nan if nan else sum(taus) / len(taus),
        top1_agreement=top1 / len(reference), top5_agreement=sum(top5) / len(top5))
