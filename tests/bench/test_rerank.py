"""Smoke test of bench/rerank.py on the tiny model and a tiny chat folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import rerank

ISSUE_KEYS = {"dtype", "pairs", "official_pairs_per_s", "st_pairs_per_s", "ours_pairs_per_s", "speedup_vs_official",
              "speedup_vs_st", "max_abs_diff_vs_official", "ms_per_query_5", "peak_rss_mb", "matmul_peak_gflops",
              "ours_effective_gflops"}


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
                 "--model-dir", str(tiny_reranker_dir), "--json", str(out)])
    return json.loads(out.read_text())


def test_bench_reports_every_figure_the_issue_asks_for(bench_result: dict) -> None:
    assert ISSUE_KEYS <= bench_result.keys()


def test_bench_fast_path_matches_the_official_method(bench_result: dict) -> None:
    assert bench_result["max_abs_diff_vs_official"] <= 1e-5


def test_bench_cross_encoder_scores_the_same_prompt(bench_result: dict) -> None:
    assert bench_result["st_error"] is None and bench_result["st_max_abs_diff_vs_ours"] <= 1e-5
