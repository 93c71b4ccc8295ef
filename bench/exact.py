"""The scale bench's yardstick: exact top-k by numpy over every vector, and an index's recall@k against it."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.vectors import random_units
from cogs.memory.vectors.hnsw import ef_for
from cogs.memory.vectors.index import VectorIndex

__all__ = ("EF_SWEEP", "K", "ef_sweep", "exact_comparison", "percentile_ms", "random_worst_case", "recall_at_k",
           "timed_sync", "top_k")

K = 10
# HNSW candidate counts whose recall and latency are reported beside the one the index uses.
EF_SWEEP = (128, 256, 384, 512, 768, 1024)


def percentile_ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples) * 1000.0, q)), 2)


def timed_sync(function: Any, queries: np.ndarray) -> list[float]:
    samples = []
    for query in queries:
        started = time.perf_counter()
        function(query)
        samples.append(time.perf_counter() - started)
    return samples


def top_k(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, K)[:K]
    return top[np.argsort(-scores[top])]


def recall_at_k(index: VectorIndex, queries: np.ndarray, exact: list[set[int]]) -> float:
    _, found = index.search(queries, K)
    return round(float(np.mean([len(exact[i] & set(found[i].tolist())) / K for i in range(len(queries))])), 3)


def exact_comparison(index: VectorIndex, ids: np.ndarray, matrix: np.ndarray, queries: np.ndarray,
                     suffix: str, candidates: int) -> dict[str, Any]:
    """Brute force over ``matrix`` (rows are ``ids``): its p95, and the index's recall@10 against it."""
    samples = timed_sync(lambda query: top_k(matrix, query), queries)
    exact = [set(ids[top_k(matrix, query)].tolist()) for query in queries]
    result: dict[str, Any] = {"bruteforce_p95_ms": percentile_ms(samples, 95),
                              f"index_recall_at_10_{suffix}": recall_at_k(index, queries, exact)}
    if index.kind == "hnsw":
        result["index_ef_search"] = ef_for(len(index))
        result["ef_sweep"] = ef_sweep(index, queries, exact, candidates)
    else:
        # What the graph would find on these vectors: the same data forced into one.
        forced = VectorIndex(index.dimension, index.model, flat_max=0)
        forced.add(ids, matrix)
        result[f"graph_recall_at_10_{suffix}"] = recall_at_k(forced, queries, exact)
    return result


def ef_sweep(index: VectorIndex, queries: np.ndarray, exact: list[set[int]], candidates: int
             ) -> dict[str, list[float]]:
    """[recall@10, index-only p95 ms] at other HNSW candidate counts."""
    chosen, sweep = index.ef_search, {}
    try:
        for ef in EF_SWEEP:
            index.ef_search = ef
            samples = timed_sync(lambda query: index.search(query, candidates), queries)
            sweep[str(ef)] = [recall_at_k(index, queries, exact), percentile_ms(samples, 95)]
    finally:
        index.ef_search = chosen
    return sweep


def random_worst_case(size: int, dimension: int, model_name: str, queries: int) -> dict[str, Any]:
    """Recall@10 of an index of ``size`` random unit vectors (no clusters: the worst case), and its build time."""
    vectors = random_units(size, dimension, seed=size)
    probes = random_units(queries, dimension, seed=size + 1)
    exact = [set(top_k(vectors, probe).tolist()) for probe in probes]
    index = VectorIndex(dimension, model_name)
    started = time.perf_counter()
    index.add(np.arange(size), vectors)
    return {"index_build_random_s": round(time.perf_counter() - started, 1),
            "index_recall_at_10_random": recall_at_k(index, probes, exact)}
