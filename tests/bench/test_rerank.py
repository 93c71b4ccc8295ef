"""Smoke test of bench/rerank.py on the tiny model and a tiny chat folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import rerank
from cogs.memory.rerank import local

ISSUE_KEYS = {"dtype", "pairs", "official_pairs_per_s", "st_pairs_per_s", "ours_pairs_per_s", "speedup_vs_official",
              "speedup_vs_st", "max_abs_diff_vs_official", "ms_per_query_5", "peak_rss_mb", "matmul_peak_gflops",
              "ours_effective_gflops", "ms_for_budget", "backend"}


@pytest.fixture(scope="module")
def bench_result(tiny_reranker_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    data = tmp_path_factory.mktemp("chat")
    messages = [{"channel": "c1", "msg_id": f"c1/{i}", "author": "A", "text": f"message number {i} about cats"}
                for i in range(12)]
    queries = [{"channel": "c1", "qid": "c1/q0", "question": "who talked about cats?", "relevant": ["c1/3"]}]
    (data / "messages.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    out = data / "result.json"
    rerank.main(["--data", str(data), "--queries", "1", "--candidates", "5", "--dtype", "fp32",
                 "--backend", "onnx,torch", "--int8", "--model-dir", str(tiny_reranker_dir), "--json", str(out)])
    return json.loads(out.read_text())


def test_bench_reports_every_figure_the_issue_asks_for(bench_result: dict) -> None:
    assert ISSUE_KEYS <= bench_result.keys()


def test_bench_fast_path_matches_the_official_method(bench_result: dict) -> None:
    assert bench_result["max_abs_diff_vs_official"] <= 1e-5


def test_bench_cross_encoder_scores_the_same_prompt(bench_result: dict) -> None:
    assert bench_result["st_error"] is None and bench_result["st_max_abs_diff_vs_ours"] <= 1e-5


def test_bench_reports_each_backend_asked_for(bench_result: dict) -> None:
    assert bench_result["backend"] == "onnx" and list(bench_result["by_backend"]) == ["onnx", "torch", "onnx-int8"]


def test_bench_both_fp32_backends_match_the_official_method(bench_result: dict) -> None:
    rows = bench_result["by_backend"]
    assert rows["onnx"]["max_abs_diff_vs_official"] <= 1e-5 and rows["torch"]["max_abs_diff_vs_official"] <= 1e-5


def test_bench_reports_candidates_scored_within_the_profiles_budget(bench_result: dict) -> None:
    budget = bench_result["ms_for_budget"]
    assert (budget["profile"], len(budget["candidates_scored_per_query"])) == ("cpu-small", 1)
    assert 0 <= budget["min_scored"] <= budget["candidates_offered"] == 5


def test_comparison_is_pair_by_pair_on_the_baseline_pairs_in_their_order() -> None:
    cases = [rerank.Case("q0", ["a", "b", "c"]), rerank.Case("q1", ["d", "e"])]
    row = {"scores": [[0.1, 0.2, 0.3], [0.4, 0.5]], "times": [1.0, 1.0], "tokens": 10, "constant_prefix_tokens": 0,
           "constant_prefix_hits": 0, "load_s": 0.0, "peak_rss_mb": 0.0, "peak_gpu_mb": None, "ms_for_budget": {}}
    keys = [(0, 0), (0, 1), (0, 2), (1, 0)]
    official = [0.1, 0.2, 0.3, 0.4 + 1e-3]  # the pairs the baselines scored, in their order; one differs
    figures = rerank.summarise(row, cases, [3, 2], keys, official, 1.0, official[:3] + [0.4], 1.0, 1, 1.0,
                               reference=row, profile=rerank.load_profile("cpu-small"))
    assert figures["max_abs_diff_vs_official"] == pytest.approx(1e-3)
    assert figures["st_max_abs_diff_vs_ours"] == 0.0 and figures["bitwise_equal_pairs_vs_official"] == 3
    assert figures["fidelity_vs_first"]["misses"] == []  # the first backend against itself


def test_bench_reports_candidates_scored_for_each_budget(bench_result: dict) -> None:
    by_budget = bench_result["ms_for_budget"]["median_scored_by_budget_ms"]
    assert list(by_budget) == ["1000", "2000", "3000", "5000"] and all(0 <= n <= 5 for n in by_budget.values())


def test_the_official_method_writes_out_the_model_cards_prompt_that_ours_uses() -> None:
    assert (rerank.MODEL_CARD_PREFIX, rerank.MODEL_CARD_PAIR, rerank.MODEL_CARD_SUFFIX) == (
        local.SYSTEM_PREFIX, local.PROMPT_BODY, local.ASSISTANT_SUFFIX)
