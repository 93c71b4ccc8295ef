"""Benchmark: our Qwen3-Reranker scoring vs the official method and sentence-transformers' CrossEncoder.

python -m bench.rerank --data ../shared/data/locomo [--queries 5] [--candidates 20,50] [--dtype bf16|fp32]
                       [--baseline-pairs N] [--batch-size 16] [--model-dir DIR] [--json OUT]

A random-weight model of the real Qwen3-Reranker-0.6B shape (real Qwen3 tokenizer) is built in a subprocess, so the
peak RSS reported is this process's: ours runs first, then the baselines on the first N pairs (per-pair throughput).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from cogs.memory.rerank.local import ASSISTANT_SUFFIX, DEFAULT_INSTRUCTION, PROMPT_BODY, SYSTEM_PREFIX, LocalScorer
from cogs.memory.profile import HardwareDetector

DTYPES = {"bf16": ("bfloat16", torch.bfloat16), "fp32": ("float32", torch.float32)}
OFFICIAL_BATCH = 8
MAX_LENGTH = 512
# What the sentence-transformers Qwen3-Reranker conversions ship as chat_template.jinja: the official prompt,
# with the pair mapped to "query"/"document" roles (Jinja drops the template's final newline, hence the "\n" tail).
ST_CHAT_TEMPLATE = (
    SYSTEM_PREFIX
    + PROMPT_BODY.format(
        instruction=DEFAULT_INSTRUCTION,
        query='{{ messages | selectattr("role", "eq", "query") | map(attribute="content") | first }}',
        doc='{{ messages | selectattr("role", "eq", "document") | map(attribute="content") | first }}',
    )
    + ASSISTANT_SUFFIX.removesuffix("\n") + "{{ '\\n' }}"
)


@dataclass(frozen=True, slots=True)
class Case:
    query: str
    docs: list[str]


def load_cases(data_dir: Path, n_queries: int, counts: list[int], seed: int = 0) -> list[Case]:
    """N queries; for each count, the query's relevant messages plus others from its channel, shuffled."""
    messages = [json.loads(line) for line in (data_dir / "messages.jsonl").open()]
    queries = [json.loads(line) for line in (data_dir / "queries.jsonl").open()]
    by_channel: dict[str, list[dict]] = {}
    for message in messages:
        by_channel.setdefault(message["channel"], []).append(message)
    text = {m["msg_id"]: m["text"] for m in messages}
    rng = random.Random(seed)
    usable = [q for q in queries if q.get("relevant") and all(r in text for r in q["relevant"])]
    cases = []
    for query in rng.sample(usable, n_queries):
        for count in counts:
            relevant = [text[r] for r in query["relevant"]][:count]
            others = [m["text"] for m in by_channel[query["channel"]] if m["msg_id"] not in query["relevant"]]
            docs = relevant + rng.sample(others, count - len(relevant))
            rng.shuffle(docs)
            cases.append(Case(query["question"], docs))
    return cases


def matmul_peak_gflops(dtype: torch.dtype) -> float:
    """Best of a few runs of a model-shaped GEMM (512 tokens x 1024 -> 3072), the ceiling for our matmuls."""
    x, w = torch.randn(512, 1024, dtype=dtype), torch.randn(3072, 1024, dtype=dtype)
    flops, best = 2 * 512 * 1024 * 3072, float("inf")
    F.linear(x, w)
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(3):
            F.linear(x, w)
        best = min(best, (time.perf_counter() - started) / 3)
    return flops / best / 1e9


def run_ours(model_dir: Path, dtype: str, cases: list[Case], batch_size: int) -> dict:
    scorer = LocalScorer(str(model_dir), "cpu", dtype, MAX_LENGTH)
    params = sum(p.numel() for p in scorer.model.parameters())
    non_embedding = params - scorer.model.get_input_embeddings().weight.numel()
    scorer.score("warm up", ["a short message", "another one"], DEFAULT_INSTRUCTION, batch_size)
    scores, times, tokens = [], [], 0
    for case in cases:
        split = scorer.split_prompts(case.query, case.docs, DEFAULT_INSTRUCTION)
        tokens += len(split.shared) + sum(len(t) for t in split.tails)
        started = time.perf_counter()
        scores.append(scorer.score(case.query, case.docs, DEFAULT_INSTRUCTION, batch_size))
        times.append(time.perf_counter() - started)
    full_prompt_tokens = sum(len(p) for c in cases for p in scorer.prompt_ids(c.query, c.docs, DEFAULT_INSTRUCTION))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    del scorer
    gc.collect()
    return {"scores": scores, "times": times, "tokens": tokens, "non_embedding_params": non_embedding,
            "full_prompt_tokens": full_prompt_tokens, "peak_rss_mb": rss_mb}


def run_official(model_dir: Path, torch_dtype: torch.dtype, pairs: list[tuple[str, str]]) -> tuple[list[float], float]:
    """The model card's method: one prompt per pair, left padding, batch 8, full forward with full-vocab logits."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype).eval()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    prefix = tokenizer.encode(SYSTEM_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(ASSISTANT_SUFFIX, add_special_tokens=False)

    def score(batch: list[tuple[str, str]]) -> list[float]:
        texts = [PROMPT_BODY.format(instruction=DEFAULT_INSTRUCTION, query=q, doc=d) for q, d in batch]
        inputs = tokenizer(texts, padding=False, truncation="longest_first", return_attention_mask=False,
                           max_length=MAX_LENGTH - len(prefix) - len(suffix))
        inputs["input_ids"] = [prefix + ids + suffix for ids in inputs["input_ids"]]
        inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = model(**inputs).logits[:, -1, :]
        pair = torch.stack([logits[:, no], logits[:, yes]], dim=1).float()
        return torch.log_softmax(pair, dim=1)[:, 1].exp().tolist()

    score(pairs[:1])
    started = time.perf_counter()
    scores = [s for i in range(0, len(pairs), OFFICIAL_BATCH) for s in score(pairs[i : i + OFFICIAL_BATCH])]
    elapsed = time.perf_counter() - started
    del model
    gc.collect()
    return scores, elapsed


def run_st(model_dir: Path, torch_dtype: torch.dtype, pairs: list[tuple[str, str]]) -> tuple[list[float], float]:
    """sentence-transformers' CrossEncoder with its native causal-LM (yes/no LogitScore) support, batch 8."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), device="cpu", model_kwargs={"dtype": torch_dtype},
                         processor_kwargs={"chat_template": ST_CHAT_TEMPLATE})
    model.predict(pairs[:1], batch_size=OFFICIAL_BATCH, show_progress_bar=False)
    started = time.perf_counter()
    scores = model.predict(pairs, batch_size=OFFICIAL_BATCH, show_progress_bar=False)
    elapsed = time.perf_counter() - started
    del model
    gc.collect()
    return [float(s) for s in scores], elapsed


def build_model(dtype: torch.dtype) -> Path:
    """Build the real-shape random model in a subprocess so its memory never counts in this process's peak RSS."""
    target = Path(tempfile.mkdtemp(prefix="qwen3-reranker-random-"))
    code = ("import sys, torch; from pathlib import Path; from bench.qwen3_random import build_random_qwen3; "
            f"build_random_qwen3(Path(sys.argv[1]), tiny=False, dtype=torch.{str(dtype).split('.')[-1]})")
    subprocess.run([sys.executable, "-c", code, str(target)], check=True)
    return target


def benchmark(args: argparse.Namespace) -> dict:
    dtype_name, torch_dtype = DTYPES[args.dtype]
    counts = [int(c) for c in args.candidates.split(",")]
    cases = load_cases(args.data, args.queries, counts)
    load_before = os.getloadavg()[0]
    model_dir = args.model_dir or build_model(torch_dtype)
    peak = matmul_peak_gflops(torch_dtype)
    ours = run_ours(model_dir, dtype_name, cases, args.batch_size)
    pairs = [(c.query, d) for c in cases for d in c.docs]
    ours_flat = [s for case_scores in ours["scores"] for s in case_scores]
    n_base = min(args.baseline_pairs or len(pairs), len(pairs))
    official, official_s = run_official(model_dir, torch_dtype, pairs[:n_base])
    try:
        st, st_s = run_st(model_dir, torch_dtype, pairs[:n_base])
        st_error = None
    except Exception as exc:  # reported in the JSON, as the issue asks
        st, st_s, st_error = [], None, f"{type(exc).__name__}: {exc}"
    ours_s = sum(ours["times"])
    ours_pps = len(pairs) / ours_s
    result = {
        "dtype": args.dtype,
        "pairs": len(pairs),
        "queries": args.queries,
        "baseline_pairs": n_base,
        "batch_size": args.batch_size,
        "official_pairs_per_s": n_base / official_s,
        "st_pairs_per_s": n_base / st_s if st_s else None,
        "st_error": st_error,
        "ours_pairs_per_s": ours_pps,
        "speedup_vs_official": ours_pps / (n_base / official_s),
        "speedup_vs_st": ours_pps / (n_base / st_s) if st_s else None,
        "max_abs_diff_vs_official": max(abs(a - b) for a, b in zip(official, ours_flat)),
        "st_max_abs_diff_vs_ours": max(abs(a - b) for a, b in zip(st, ours_flat)) if st else None,
    }
    for count in counts:
        times = [t for t, c in zip(ours["times"], cases) if len(c.docs) == count]
        result[f"ms_per_query_{count}"] = 1000 * sum(times) / len(times)
    useful = 2 * ours["non_embedding_params"] * ours["tokens"]
    result.update({
        "peak_rss_mb": ours["peak_rss_mb"],
        "matmul_peak_gflops": peak,
        "ours_effective_gflops": useful / ours_s / 1e9,
        "ours_fraction_of_peak": useful / ours_s / 1e9 / peak,
        "tokens_needed": ours["tokens"],
        "tokens_official_prompts": ours["full_prompt_tokens"],
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_bf16_native": HardwareDetector().detect().cpu_bf16,
        "load_avg_1m_before": load_before,
        "load_avg_1m_after": os.getloadavg()[0],
    })
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with messages.jsonl and queries.jsonl")
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--candidates", default="20,50", help="candidate counts per query, comma-separated")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--baseline-pairs", type=int, default=0,
                        help="run the official method and CrossEncoder on the first N pairs only (0 = all)")
    parser.add_argument("--batch-size", type=int, default=16, help="our batch size (candidates per forward)")
    parser.add_argument("--model-dir", type=Path, help="reuse a saved model directory instead of building one")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = benchmark(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
