"""Benchmark: how far each CPU precision's rerank scores are from float32, as numbers, and how fast each runs.

python -m bench.fidelity [--data ../shared/data/locomo,bench/data/chat,bench/data/discord] [--models tiny,real]
                         [--head-scales 1,16] [--queries tiny:10,real:2] [--candidates 20] [--threads 2]
                         [--work-dir bench/out/fidelity] [--trim-cuts 256,384,512,64] [--json OUT]

For each random-weight Qwen3 (the tiny test shape, and Qwen3-Reranker-0.6B's real shape; the real Qwen3 tokenizer)
and each head scale, every precision the bot can choose (ONNX Runtime float32 = the reference, ONNX Runtime int8 as
this CPU gets it, torch bf16 where the CPU has native bf16, and on the tiny model torch float32, a check of the
reference) scores the
same queries: each query's relevant messages plus others of its channel (bench.rerank.load_cases), per data folder.
Reported per data folder: max |Δ score|, each query's Kendall τ of the candidate order (min and mean), top-1 and top-5
agreement, and whether the bot's bars (cogs/memory/rerank/fidelity.py) are met; and pairs/s of each precision, the
backends alternated query by query in one process so that the load of a shared machine falls on all of them alike.

Random weights give near-uniform P(yes) (the real-shape model's spread over 20 candidates is a few hundredths), so a
tiny numeric error reorders candidates that a trained model would keep apart: Kendall τ on them is a worst case.
`--head-scales` multiplies the final RMSNorm's weight (what feeds the yes/no head) so the scores spread over most of
[0, 1], as a trained reranker's do; both are reported.

`--trim-cuts`: for the first model and head scale, per data folder, how many candidates are longer than each cut (in
tokens) and, where some are, how far ONNX float32's scores of those queries move when the candidates are cut there;
and the padding share of every forward pass (tokens fed beyond the candidates' own: 0 when packed without padding).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from bench.rerank import Case, load_cases, report
from cogs.memory.rerank.fidelity import FidelityBars, measure_fidelity
from cogs.memory.rerank.local import DEFAULT_INSTRUCTION, LocalScorer
from cogs.memory.rerank.onnx import OnnxScorer
from cogs.memory.rerank.onnx_graph import LOGITS
from cogs.memory.rerank.onnx_export import int8_variant
from cogs.memory.runtime.hardware import HardwareDetector

DEFAULT_DATA = "../shared/data/locomo,bench/data/chat,bench/data/discord"
BATCH_SIZE = 8  # cpu-small's


def build(work: Path, model: str, scale: float) -> Path:
    """A random Qwen3 of `model`'s shape ("tiny" or "real") with its final norm scaled, saved once under `work` (in a
    subprocess, so the build's memory stays out of this process)."""
    target = work / f"{model}-x{scale:g}"
    if (target / "config.json").exists():
        return target
    code = ("import sys, torch; from pathlib import Path; from bench.qwen3_random import build_random_qwen3\n"
            "from transformers import AutoModelForCausalLM\n"
            "target = build_random_qwen3(Path(sys.argv[1]), tiny=sys.argv[2] == 'tiny')\n"
            "model = AutoModelForCausalLM.from_pretrained(target, dtype=torch.float32)\n"
            "with torch.no_grad(): model.model.norm.weight.mul_(float(sys.argv[3]))\n"
            "model.save_pretrained(target)\n")
    subprocess.run([sys.executable, "-c", code, str(target), model, str(scale)], check=True)
    return target


def scorers(model_dir: Path, export_dir: Path, bf16: bool, check: bool) -> dict[str, LocalScorer]:
    """Every precision the bot could choose, plus torch float32 with `check`; the first is the reference."""
    name = str(model_dir)
    out: dict[str, LocalScorer] = {"onnx-float32": OnnxScorer(name, 512, export_dir),
                                   "onnx-int8": OnnxScorer(name, 512, export_dir, int8=True)}
    if bf16:
        out["torch-bf16"] = LocalScorer(name, "cpu", "bfloat16", 512)
    if check:
        out["torch-float32"] = LocalScorer(name, "cpu", "float32", 512)
    return out


def run(model_dir: Path, export_dir: Path, sets: dict[str, list[Case]], bf16: bool, check: bool) -> dict:
    """Scores and times per precision, alternated: for each query every backend in turn, the order rotating."""
    backends = scorers(model_dir, export_dir, bf16, check)
    names = list(backends)
    for scorer in backends.values():
        scorer.score("warm up", ["a short message", "another one"], DEFAULT_INSTRUCTION, BATCH_SIZE)
    scores: dict[str, dict[str, list[list[float]]]] = {n: {s: [] for s in sets} for n in names}
    seconds = dict.fromkeys(names, 0.0)
    turn = 0
    for set_name, cases in sets.items():
        for case in cases:
            for name in names[turn % len(names):] + names[: turn % len(names)]:
                started = time.perf_counter()
                got = backends[name].score(case.query, case.docs, DEFAULT_INSTRUCTION, BATCH_SIZE)
                seconds[name] += time.perf_counter() - started
                scores[name][set_name].append([float("nan") if s is None else s for s in got])
            turn += 1
    for scorer in backends.values():
        scorer.close()
    pairs = sum(len(c.docs) for cases in sets.values() for c in cases)
    bars = FidelityBars()
    reference = names[0]
    out: dict = {"reference": reference, "pairs": pairs, "by_backend": {}}
    for name in names:
        row: dict = {"pairs_per_s": pairs / seconds[name], "speed_vs_reference": seconds[reference] / seconds[name]}
        for set_name in sets:
            ref = scores[reference][set_name]
            flat = [s for query in ref for s in query]
            fidelity = measure_fidelity(ref, scores[name][set_name])
            row[set_name] = {**fidelity.as_dict(), "meets_bars": not bars.misses(fidelity),
                             "misses": bars.misses(fidelity),
                             "reference_spread": [min(flat), statistics.median(flat), max(flat)]}
        out["by_backend"][name] = row
    return out


def trim_effect(model_dir: Path, export_dir: Path, sets: dict[str, list[Case]], cuts: list[int]) -> dict:
    """Per data folder and cut: candidates longer than the cut, and for the queries that have any, the change in
    ONNX float32's scores when every candidate is cut to that many tokens; and the padding share of every pass."""
    scorer = OnnxScorer(str(model_dir), 512, export_dir)
    fed = {"tokens": 0, "candidate_tokens": 0}
    forward, run = scorer.forward_tails, scorer._run

    def counted(prefix_kv: list, tails: list[list[int]]) -> list[float]:
        fed["candidate_tokens"] += sum(len(t) for t in tails)
        return forward(prefix_kv, tails)

    def session_run(past: list, ids: list[int], *rest: Any) -> list[Any]:
        if LOGITS in rest[-1]:  # a scoring pass (the prefix's passes return only the KV cache)
            fed["tokens"] += len(ids)  # the input_ids the session is fed
        return run(past, ids, *rest)

    scorer.forward_tails, scorer._run = counted, session_run  # type: ignore[method-assign]
    out: dict = {}
    for set_name, cases in sets.items():
        lengths = [[len(ids) for ids in scorer.tokenizer(c.docs, add_special_tokens=False)["input_ids"]] for c in cases]
        row: dict = {"candidates": sum(map(len, lengths)), "max_tokens": max(map(max, lengths))}
        for cut in cuts:
            affected = [i for i, ls in enumerate(lengths) if max(ls) > cut]
            entry: dict = {"longer": sum(n > cut for ls in lengths for n in ls), "queries_affected": len(affected)}
            if affected:
                full, trimmed = [], []
                for i in affected:
                    cut_docs = [scorer.tokenizer.decode(ids[:cut]) for ids in
                                scorer.tokenizer(cases[i].docs, add_special_tokens=False)["input_ids"]]
                    full.append(_floats(scorer.score(cases[i].query, cases[i].docs, DEFAULT_INSTRUCTION, BATCH_SIZE)))
                    trimmed.append(_floats(scorer.score(cases[i].query, cut_docs, DEFAULT_INSTRUCTION, BATCH_SIZE)))
                entry["fidelity_vs_uncut"] = measure_fidelity(full, trimmed).as_dict()
            row[f"cut_{cut}"] = entry
        out[set_name] = row
    scorer.close()
    out["padding_share"] = 1 - fed["candidate_tokens"] / fed["tokens"] if fed["tokens"] else None
    out["tokens_fed"] = fed["tokens"]
    return out


def _floats(scores: list[float | None]) -> list[float]:
    return [float("nan") if s is None else s for s in scores]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DEFAULT_DATA, help="data folders (messages.jsonl, queries.jsonl), commas")
    parser.add_argument("--models", default="tiny,real", help="tiny (the tests' shape), real (Qwen3-Reranker-0.6B's)")
    parser.add_argument("--head-scales", default="1,16", help="final-norm scales, commas (1 = as built)")
    parser.add_argument("--queries", default="tiny:10,real:2", help="queries per data folder, per model")
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work-dir", type=Path, default=Path("bench/out/fidelity"),
                        help="models and ONNX exports, kept for reruns (the real shape: about 6 GB per scale)")
    parser.add_argument("--trim-cuts", default="", help="token cuts to measure on the first model (commas)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    hardware = HardwareDetector().detect()
    queries = dict(item.split(":") for item in args.queries.split(","))
    result: dict = {"cpu_features": list(hardware.cpu_features), "int8_variant": int8_variant(hardware.cpu_features),
                    "threads": args.threads, "bars": FidelityBars().as_dict(),
                    "load_avg_1m_before": os.getloadavg()[0], "runs": {}}
    for model in args.models.split(","):
        for scale in (float(s) for s in args.head_scales.split(",")):
            sets = {}
            for folder in args.data.split(","):
                path = Path(folder)
                sets[path.name] = load_cases(path, int(queries[model]), [args.candidates])
            model_dir = build(args.work_dir, model, scale)
            result["runs"][f"{model}-x{scale:g}"] = run(model_dir, args.work_dir / "onnx", sets, hardware.cpu_bf16,
                                                         check=model == "tiny")
            print(json.dumps({f"{model}-x{scale:g}": result["runs"][f"{model}-x{scale:g}"]}), file=sys.stderr)
            if args.trim_cuts and "trim" not in result:
                cuts = [int(c) for c in args.trim_cuts.split(",")]
                result["trim"] = trim_effect(model_dir, args.work_dir / "onnx", sets, cuts)
    result["load_avg_1m_after"] = os.getloadavg()[0]
    report(result, args.json)


if __name__ == "__main__":
    main()
