"""Benchmark: our Qwen3-Reranker scoring vs the official method and sentence-transformers' CrossEncoder.

python -m bench.rerank --data ../shared/data/locomo [--queries 5] [--candidates 20,50] [--dtype bf16|fp16|fp32]
                       [--device cpu|cuda] [--backend torch,onnx] [--int8] [--profile cpu-small] [--budgets 1000,3000]
                       [--baseline-pairs N]
                       [--batch-size 16] [--model-dir DIR] [--export-dir DIR] [--json OUT]

A random-weight model of the real Qwen3-Reranker-0.6B shape (real Qwen3 tokenizer) is built in a subprocess, so the
peak RSS reported is this process's: ours runs first (each backend listed; the first one gives the top-level
figures), then the baselines on the first N pairs (per-pair throughput). Every comparison is made pair by pair on
exactly those N pairs. `ms_for_budget` is what the profile's time budget buys: candidates scored per query, and
for each of --budgets the median scored (the trade-off of candidates scored against the budget on this machine).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from bench.output import report
from cogs.memory.rerank.fidelity import FidelityBars, measure_fidelity
from cogs.memory.rerank.local import DEFAULT_INSTRUCTION, LocalScorer
from cogs.memory.rerank.precision import candidate_depth
from cogs.memory.runtime.hardware import HardwareDetector
from cogs.memory.runtime.profile import MemoryProfile, load_profile

DTYPES = {"bf16": ("bfloat16", torch.bfloat16), "fp16": ("float16", torch.float16), "fp32": ("float32", torch.float32)}
BACKENDS = ("torch", "onnx", "torch-bf16", "openvino-bf16", "openvino-int8")
OFFICIAL_BATCH = 8
MAX_LENGTH = 512
# The official method's prompt, written out as the Qwen3-Reranker model card has it (not imported from the scorer),
# so a drift in our prompt shows up as a difference instead of being shared by both sides of the comparison.
MODEL_CARD_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n"
)
MODEL_CARD_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
MODEL_CARD_PAIR = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
# What the sentence-transformers Qwen3-Reranker conversions ship as chat_template.jinja: the official prompt,
# with the pair mapped to "query"/"document" roles (Jinja drops the template's final newline, hence the "\n" tail).
ST_CHAT_TEMPLATE = (
    MODEL_CARD_PREFIX
    + MODEL_CARD_PAIR.format(
        instruction=DEFAULT_INSTRUCTION,
        query='{{ messages | selectattr("role", "eq", "query") | map(attribute="content") | first }}',
        doc='{{ messages | selectattr("role", "eq", "document") | map(attribute="content") | first }}',
    )
    + MODEL_CARD_SUFFIX.removesuffix("\n") + "{{ '\\n' }}"
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


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def matmul_peak_gflops(dtype: torch.dtype, device: str = "cpu") -> float:
    """Best of a few runs of a model-shaped GEMM (512 tokens x 1024 -> 3072), the ceiling for our matmuls."""
    x = torch.randn(512, 1024, dtype=dtype, device=device)
    w = torch.randn(3072, 1024, dtype=dtype, device=device)
    flops, best = 2 * 512 * 1024 * 3072, float("inf")
    F.linear(x, w)
    synchronize(device)
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(3):
            F.linear(x, w)
        synchronize(device)
        best = min(best, (time.perf_counter() - started) / 3)
    return flops / best / 1e9


def non_embedding_params(model_dir: Path) -> int:
    """Parameters that cost FLOPs per token: all but the input embedding (a lookup), from the config alone."""
    from transformers import AutoConfig

    c = AutoConfig.from_pretrained(model_dir)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    attention = c.hidden_size * head_dim * (2 * c.num_attention_heads + 2 * c.num_key_value_heads) \
        + 2 * head_dim
    layer = attention + 3 * c.hidden_size * c.intermediate_size + 2 * c.hidden_size
    return c.num_hidden_layers * layer + c.hidden_size  # the head is tied to the embedding and not run per token


def make_scorer(backend: str, model_dir: Path, dtype: str, export_dir: Path, int8: bool,
                max_length: int = MAX_LENGTH, device: str = "cpu") -> LocalScorer:
    if backend == "torch":
        return LocalScorer(str(model_dir), device, dtype, max_length)
    from cogs.memory.rerank.onnx import OnnxScorer
    from cogs.memory.rerank.openvino import OpenVinoScorer

    if backend.startswith("openvino-"):  # the ONNX export compiled by OpenVINO, computing in bf16
        return OpenVinoScorer(str(model_dir), max_length, export_dir, compute="bf16", int8=backend.endswith("int8"))
    if device != "cpu":
        raise SystemExit("--backend onnx runs on the CPU; use --backend torch with --device cuda")
    if dtype != "float32":
        raise SystemExit("--backend onnx runs float32 (or --int8); use --dtype fp32 (torch-bf16 for bf16)")
    return OnnxScorer(str(model_dir), max_length, export_dir, int8=int8)


def scored_within(
    scorer: LocalScorer, cases: list[Case], batch_size: int, budget_ms: int
) -> tuple[list[int], list[float]]:
    """Per query: candidates scored within `budget_ms` (in first-stage order, as the bot does) and the ms taken."""
    scored, elapsed = [], []
    for case in cases:
        started = time.monotonic()
        deadline = started + budget_ms / 1000 if budget_ms else None
        scores = scorer.score(case.query, case.docs, DEFAULT_INSTRUCTION, batch_size, deadline)
        elapsed.append(1000 * (time.monotonic() - started))
        scored.append(sum(score is not None for score in scores))
    return scored, elapsed


def run_budget(scorer: LocalScorer, cases: list[Case], profile: MemoryProfile, budgets_ms: list[int]) -> dict:
    """What the profile's time budget buys (candidates scored per query, and the ms each query took), and the
    median candidates scored for each of `budgets_ms`: the trade-off on this machine."""
    settings = profile.reranker
    docs = [Case(c.query, c.docs[: settings.candidates]) for c in cases]
    scored, elapsed = scored_within(scorer, docs, settings.batch_size, settings.time_budget_ms)
    return {"profile": profile.name, "budget_ms": settings.time_budget_ms, "batch_size": settings.batch_size,
            "candidates_offered": min(len(c.docs) for c in docs),
            "candidates_scored_per_query": scored, "min_scored": min(scored),
            "median_scored": statistics.median(scored), "ms_per_query": [round(ms) for ms in elapsed],
            "median_scored_by_budget_ms": {
                str(ms): statistics.median(scored_within(scorer, docs, settings.batch_size, ms)[0])
                for ms in budgets_ms}}


def run_ours(scorers: dict[str, LocalScorer], cases: list[Case], batch_size: int) -> dict[str, dict]:
    """Each case timed once per scorer, the scorers alternated (the order rotating case by case), after a warm-up
    that also fills the instruction's constant-prefix cache (as the bot's first recall does): tokens needed are the
    query's own prefix tokens and the candidates' tails."""
    names = list(scorers)
    for scorer in scorers.values():
        scorer.score("warm up", ["a short message", "another one"], DEFAULT_INSTRUCTION, batch_size)
    first = scorers[names[0]]
    constant = len(first.constant_ids(DEFAULT_INSTRUCTION))
    tokens = 0
    for case in cases:
        split = first.split_prompts(case.query, case.docs, DEFAULT_INSTRUCTION)
        tokens += len(split.shared) - constant + sum(len(t) for t in split.tails)
    scores: dict[str, list] = {name: [] for name in names}
    times: dict[str, list[float]] = {name: [] for name in names}
    for n, case in enumerate(cases):
        for name in names[n % len(names):] + names[: n % len(names)]:
            started = time.perf_counter()
            scores[name].append(scorers[name].score(case.query, case.docs, DEFAULT_INSTRUCTION, batch_size))
            times[name].append(time.perf_counter() - started)
    full_prompt_tokens = sum(len(p) for c in cases for p in first.prompt_ids(c.query, c.docs, DEFAULT_INSTRUCTION))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {name: {"scores": scores[name], "times": times[name], "tokens": tokens,
                   "full_prompt_tokens": full_prompt_tokens, "peak_rss_mb": rss_mb,
                   "peak_gpu_mb": peak_gpu_mb(scorer.device), "constant_prefix_tokens": constant,
                   "constant_prefix_hits": scorer.constant_prefixes.hits} for name, scorer in scorers.items()}


def peak_gpu_mb(device: str) -> float | None:
    """The most GPU memory torch held since the last reset (None on the CPU)."""
    if not device.startswith("cuda"):
        return None
    return torch.cuda.max_memory_allocated(device) / 2**20


def run_official(model_dir: Path, torch_dtype: torch.dtype, pairs: list[tuple[str, str]],
                 device: str = "cpu") -> tuple[list[float], float]:
    """The model card's method, with its own prompt text (MODEL_CARD_*) and none of our scorer's code: one prompt
    per pair, left padding, batch 8, full forward with full-vocab logits."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype).to(device).eval()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    prefix = tokenizer.encode(MODEL_CARD_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(MODEL_CARD_SUFFIX, add_special_tokens=False)

    def score(batch: list[tuple[str, str]]) -> list[float]:
        texts = [MODEL_CARD_PAIR.format(instruction=DEFAULT_INSTRUCTION, query=q, doc=d) for q, d in batch]
        inputs = tokenizer(texts, padding=False, truncation="longest_first", return_attention_mask=False,
                           max_length=MAX_LENGTH - len(prefix) - len(suffix))
        inputs["input_ids"] = [prefix + ids + suffix for ids in inputs["input_ids"]]
        inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt").to(device)
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


def run_st(model_dir: Path, torch_dtype: torch.dtype, pairs: list[tuple[str, str]],
           device: str = "cpu") -> tuple[list[float], float]:
    """sentence-transformers' CrossEncoder with its native causal-LM (yes/no LogitScore) support, batch 8."""
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), device=device, model_kwargs={"dtype": torch_dtype},
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


def max_abs_diff(reference: list[float], ours: list[float]) -> float:
    return max(abs(a - b) for a, b in zip(reference, ours, strict=True))


def run_backends(args: argparse.Namespace, model_dir: Path, dtype: str, cases: list[Case],
                 export_dir: Path) -> dict[str, dict]:
    """Our scorer on every case, once per backend asked for (int8 ONNX beside fp32 with --int8; "torch-bf16" is torch
    in bfloat16 whatever --dtype says). With several backends they are all loaded first and alternated case by case,
    the order rotating, so that the load of a shared machine falls on each alike; then each one's budget sweep."""
    names = [b.strip() for b in args.backend.split(",")]
    if unknown := [b for b in names if b not in BACKENDS]:
        raise SystemExit(f"--backend {','.join(unknown)}: allowed: {' | '.join(BACKENDS)}")
    runs = [(name, False) for name in names] + ([("onnx", True)] if args.int8 else [])
    profile = load_profile(args.profile)
    budgets = [int(ms) for ms in args.budgets.split(",") if ms.strip()]
    scorers, load_s = {}, {}
    for name, int8 in runs:
        started = time.perf_counter()
        key = f"{name}-int8" if int8 else name
        backend, backend_dtype = ("torch", "bfloat16") if name == "torch-bf16" else (name, dtype)
        scorers[key] = make_scorer(backend, model_dir, backend_dtype, export_dir, int8, device=args.device)
        load_s[key] = time.perf_counter() - started
    if args.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(args.device)
    rows = run_ours(scorers, cases, args.batch_size)
    for key, scorer in scorers.items():
        export = getattr(scorer, "export_dir", None)  # an ONNX scorer's export: its name says the variant
        rows[key].update(load_s=load_s[key], ms_for_budget=run_budget(scorer, cases, profile, budgets),
                         export=None if export is None else export.name)
        scorer.close()
    scorers.clear()
    gc.collect()
    return rows


def summarise(row: dict, cases: list[Case], counts: list[int], keys: list[tuple[int, int]], official: list[float],
              official_s: float, st: list[float], st_s: float | None, useful_per_token: int, peak: float,
              reference: dict, profile: MemoryProfile) -> dict:
    """One backend's figures; every comparison is pair by pair over `keys` (case, doc), the pairs the baselines
    scored, in the order they scored them."""
    mine = [row["scores"][case][doc] for case, doc in keys]
    seconds = sum(row["times"])
    pairs_per_s = sum(len(c.docs) for c in cases) / seconds
    useful_gflops = 2 * useful_per_token * row["tokens"] / seconds / 1e9
    out = {
        "pairs_per_s": pairs_per_s,
        "speedup_vs_official": pairs_per_s / (len(keys) / official_s),
        "speedup_vs_st": pairs_per_s / (len(keys) / st_s) if st_s else None,
        "max_abs_diff_vs_official": max_abs_diff(official, mine),
        "st_max_abs_diff_vs_ours": max_abs_diff(st, mine) if st else None,
        "bitwise_equal_pairs_vs_official": sum(a == b for a, b in zip(official, mine, strict=True)),
        "effective_gflops": useful_gflops,
        "fraction_of_peak": useful_gflops / peak,
        "tokens_needed": row["tokens"],
        "constant_prefix_tokens": row["constant_prefix_tokens"],
        "constant_prefix_hits": row["constant_prefix_hits"],
        "load_s": row["load_s"],
        "export": row.get("export"),
        "peak_rss_mb": row["peak_rss_mb"],
        "peak_gpu_mb": row["peak_gpu_mb"],
        "ms_for_budget": row["ms_for_budget"],
        "depth_within_budget": candidate_depth(profile.reranker, pairs_per_s),
    }
    fidelity = measure_fidelity(reference["scores"], row["scores"])
    out["fidelity_vs_first"] = {**fidelity.as_dict(), "misses": FidelityBars().misses(fidelity)}
    for count in counts:
        times = [t for t, c in zip(row["times"], cases, strict=True) if len(c.docs) == count]
        out[f"ms_per_query_{count}"] = 1000 * sum(times) / len(times)
    return out


def benchmark(args: argparse.Namespace) -> dict:
    """`measure` on --model-dir, or on a random real-shape model built for the run and deleted after it."""
    if args.model_dir is not None:
        return measure(args, args.model_dir)
    model_dir = build_model(DTYPES[args.dtype][1])
    try:
        return measure(args, model_dir)
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)


def measure(args: argparse.Namespace, model_dir: Path) -> dict:
    dtype_name, torch_dtype = DTYPES[args.dtype]
    counts = [int(c) for c in args.candidates.split(",")]
    cases = load_cases(args.data, args.queries, counts)
    load_before = os.getloadavg()[0]
    export_dir = args.export_dir or Path(tempfile.mkdtemp(prefix="rerank-onnx-"))
    peak = matmul_peak_gflops(torch_dtype, args.device)
    try:
        rows = run_backends(args, model_dir, dtype_name, cases, export_dir)
    finally:
        if args.export_dir is None:
            shutil.rmtree(export_dir, ignore_errors=True)
    keys = [(i, j) for i, case in enumerate(cases) for j in range(len(case.docs))]
    keys = keys[: args.baseline_pairs or len(keys)]
    pairs = [(cases[i].query, cases[i].docs[j]) for i, j in keys]
    official, official_s = run_official(model_dir, torch_dtype, pairs, args.device)
    try:
        st, st_s = run_st(model_dir, torch_dtype, pairs, args.device)
        st_error = None
    except Exception as exc:  # reported in the JSON, as the issue asks
        st, st_s, st_error = [], None, f"{type(exc).__name__}: {exc}"
    useful_per_token = non_embedding_params(model_dir)
    first_row = next(iter(rows.values()))
    profile = load_profile(args.profile)
    by_backend = {name: summarise(row, cases, counts, keys, official, official_s, st, st_s, useful_per_token, peak,
                                  first_row, profile) for name, row in rows.items()}
    first_name = next(iter(by_backend))
    first = by_backend[first_name]
    return {
        "dtype": args.dtype,
        "backend": first_name,
        "pairs": sum(len(c.docs) for c in cases),
        "queries": args.queries,
        "baseline_pairs": len(keys),
        "batch_size": args.batch_size,
        "official_pairs_per_s": len(keys) / official_s,
        "official_score_range": [min(official), max(official)],
        "st_pairs_per_s": len(keys) / st_s if st_s else None,
        "st_error": st_error,
        "ours_pairs_per_s": first["pairs_per_s"],
        **{key: first[key] for key in ("speedup_vs_official", "speedup_vs_st", "max_abs_diff_vs_official",
                                       "st_max_abs_diff_vs_ours", "bitwise_equal_pairs_vs_official")},
        **{key: value for key, value in first.items() if key.startswith("ms_per_query_")},
        "ms_for_budget": first["ms_for_budget"],
        "peak_rss_mb": first["peak_rss_mb"],
        "peak_gpu_mb": first["peak_gpu_mb"],
        "matmul_peak_gflops": peak,
        "ours_effective_gflops": first["effective_gflops"],
        "ours_fraction_of_peak": first["fraction_of_peak"],
        "tokens_needed": first["tokens_needed"],
        "tokens_official_prompts": rows[first_name]["full_prompt_tokens"],
        "by_backend": by_backend,
        "device": args.device,
        "device_name": torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else None,
        "threads": torch.get_num_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_bf16_native": HardwareDetector().detect().cpu_bf16,
        "load_avg_1m_before": load_before,
        "load_avg_1m_after": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder with messages.jsonl and queries.jsonl")
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--candidates", default="20,50", help="candidate counts per query, comma-separated")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--device", default="cpu", help="where our torch backend and the baselines run (cpu, cuda)")
    parser.add_argument("--backend", default="torch",
                        help=f"our backends, comma-separated ({', '.join(BACKENDS)}), alternated case by case; the "
                             "first gives the top-level figures and the reference of each one's fidelity_vs_first")
    parser.add_argument("--int8", action="store_true", help="also run ONNX Runtime with int8 weights")
    parser.add_argument("--profile", default="cpu-small", help="profile whose time budget ms_for_budget measures")
    parser.add_argument("--budgets", default="1000,2000,3000,5000",
                        help="time budgets (ms) for the candidates-scored trade-off, comma-separated ('' = none)")
    parser.add_argument("--baseline-pairs", type=int, default=0,
                        help="run the official method and CrossEncoder on the first N pairs only (0 = all)")
    parser.add_argument("--batch-size", type=int, default=16, help="our batch size (candidates per forward)")
    parser.add_argument("--model-dir", type=Path, help="reuse a saved model directory instead of building one")
    parser.add_argument("--export-dir", type=Path,
                        help="keep (and reuse) ONNX exports here; default: a temporary folder, removed after")
    parser.add_argument("--threads", type=int, default=0, help="torch and ONNX Runtime threads (0 = defaults)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    report(benchmark(args), args.json)


if __name__ == "__main__":
    main()
