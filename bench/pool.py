"""Benchmark: pool recall, the reranker's ceiling: the share of each query's relevant messages inside the pool of N
candidates the reranker judges, the first stage's top N against the pool widened by context (search/pool.py).

python -m bench.pool [--data DIR | --messages M.jsonl --queries Q.jsonl] [--depth 6,20,50] [--json OUT]
                     [--profile cpu-small] [--candidates 100] [--db DIR] [--loans-off RULE[,RULE]]
                     [--smoke-rerank N]

Each query is searched once (hybrid, the first stage's defaults, as bench.recall does), to the largest depth; for
each depth N the first stage's top N is its pool, and each widening rule (how many of the top hits lend, how many
context messages each brings, whether guessed context counts) builds a pool of the same N from those N hits. A
rule's row gives its pool recall, its gain over the first stage's, and per context kind how many candidates it
brought and how many of them were relevant.

``--loans-off RULE`` (bench/ablation.py's names, repeatable) measures again with that first-stage loan switched off:
the first stage's R@10 and MRR@10 and each depth's pool recall, first stage and widened (docs/loans.md).
``--smoke-rerank N`` also runs N recalls end to end with a tiny random-weight reranker (bench/qwen3_random.py) and the
widening on: its scores mean nothing; it shows the pool reaches the reranker and context candidates come back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from cogs.memory.memory import Memory
from cogs.memory.records import SearchFilters
from cogs.memory.runtime.ranking import RankingTuning
from cogs.memory.search.pool import pool

from . import ablation
from .dataset import GUILD_ID, Query, load_dataset
from .recall import DEFAULT_DATA, ingested, score

# (lenders, per hit, burst, guessed, groups only): the rules measured; the first stage's pool is lenders = 0.
# Without burst or guessed, a hit brings only what Discord links to it: its replies and the message it replies to;
# groups only: the burst and the guessed only in a channel the first stage reads as a group.
Rule = tuple[int, int, bool, bool, bool]
RULES: tuple[Rule, ...] = (
    (1, 1, False, False, False), (2, 1, False, False, False), (3, 1, False, False, False), (5, 1, False, False, False),
    (3, 1, True, False, False), (3, 1, True, True, False),
    (1, 1, True, True, True), (3, 1, True, True, True), (3, 2, True, True, True), (5, 1, True, True, True))


def rule_name(lenders: int, per_hit: int, burst: bool, guessed: bool, groups_only: bool) -> str:
    where = " in groups" if groups_only and (burst or guessed) else ""
    return f"{lenders}x{per_hit}{'+burst' if burst else ''}{'+guessed' if guessed else ''}{where}"


def as_tuning(tuning: RankingTuning, rule: Rule) -> RankingTuning:
    """``tuning`` with ``rule``'s pool settings, at every depth."""
    lenders, per_hit, burst, guessed, groups_only = rule
    return replace(tuning, pool_lenders=lenders, pool_per_hit=per_hit, pool_burst=burst, pool_guessed=guessed,
                   pool_groups_only=groups_only, pool_full_from=0)


def _filters(query: Query) -> SearchFilters:
    """The query's search filters, as bench.recall asks: its channel, or the guild for a guild-wide one."""
    return SearchFilters(guild_id=GUILD_ID, channel_ids=None if query.guild_wide else frozenset({query.channel_id}))


def share_in(ids: Sequence[int], relevant: frozenset[int]) -> float:
    return len(relevant.intersection(ids)) / len(relevant) if relevant else 0.0


async def measure(memory: Memory, queries: list[Query], depths: Sequence[int],
                  rules: Sequence[Rule]) -> dict[str, Any]:
    """Each depth's pool recall, first stage and widened by each rule, and the first stage's R@10 and MRR@10."""
    engine = memory.search_engine
    first: dict[int, list[float]] = {depth: [] for depth in depths}
    widened: dict[tuple[int, str], list[float]] = {}
    brought: dict[tuple[int, str], Counter[str]] = {}
    relevant_brought: dict[tuple[int, str], Counter[str]] = {}
    ranking: list[dict[str, float]] = []
    for query in queries:
        filters = _filters(query)
        searched = await engine.searched(query.question, filters, max(depths), asked_at=query.asked_at)
        hits = list(searched.hits)
        ranked = [hit.message_id for hit in hits]
        ranking.append(score(ranked, query.relevant))
        for depth in depths:
            first[depth].append(share_in(ranked[:depth], query.relevant))
            for rule in (*rules, None):  # None: the tuning's own pool rule (the default, unless a profile sets it)
                name = "default" if rule is None else rule_name(*rule)
                tuning = engine.tuning if rule is None else as_tuning(engine.tuning, rule)
                pooled = await pool(engine, hits[:depth], filters, depth, tuning, searched.context)
                widened.setdefault((depth, name), []).append(
                    share_in([entry.hit.message_id for entry in pooled], query.relevant))
                for entry in pooled:
                    if entry.hit.pooled_by is not None:
                        kind = entry.hit.pooled_by.kind
                        brought.setdefault((depth, name), Counter())[kind] += 1
                        if entry.hit.message_id in query.relevant:
                            relevant_brought.setdefault((depth, name), Counter())[kind] += 1
    mean = statistics.fmean
    return {
        "recall@10": round(mean(row["recall@10"] for row in ranking), 4),
        "mrr@10": round(mean(row["mrr@10"] for row in ranking), 4),
        "depths": {depth: {
            "first_stage": round(mean(first[depth]), 4),
            "rules": {name: {"pool_recall": round(mean(values), 4), "gain": round(mean(values) - mean(first[depth]), 4),
                             "brought": dict(brought.get((at, name), {})),
                             "relevant": dict(relevant_brought.get((at, name), {}))}
                      for (at, name), values in widened.items() if at == depth},
        } for depth in depths},
    }


async def smoke_rerank(memory: Memory, queries: list[Query], count: int) -> dict[str, Any]:
    """``count`` recalls with a tiny random reranker and the widening on (3 lenders, 2 each, every kind): what came back."""
    from bench.qwen3_random import build_random_qwen3
    from cogs.memory import models
    from cogs.memory.runtime.profile import RerankerSettings

    with tempfile.TemporaryDirectory() as directory:
        model = build_random_qwen3(Path(directory), tiny=True)
        settings = RerankerSettings(model=str(model), backend="torch", batch_size=8, max_length=512, candidates=20,
                                    top_k=20, min_score=0.0, time_budget_ms=0, preload=False, cache_size=256)
        profile = replace(memory.profile, device="cpu", dtype="float32", reranker=settings)
        reranker = await asyncio.to_thread(models.build_reranker, profile, "cpu", None)
        assert reranker is not None and await reranker.aload()
        memory.profile, memory.reranker = profile, reranker
        engine = memory.search_engine
        saved = engine.tuning
        engine.tuning = replace(saved, pool_lenders=3, pool_per_hit=2, pool_burst=True, pool_guessed=True,
                                pool_groups_only=False)
        try:
            recalls = [await memory.recall(query.question, _filters(query), 10) for query in queries[:count]]
        finally:
            engine.tuning = saved
            await reranker.aclose()
    return {"recalls": len(recalls), "offered": sum(r.rerank.offered for r in recalls if r.rerank),
            "scored": sum(r.rerank.scored for r in recalls if r.rerank),
            "context_hits_returned": sum(hit.pooled_by is not None for r in recalls for hit in r.hits),
            "hits_returned": sum(len(r.hits) for r in recalls)}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    records, queries = load_dataset(args.messages, args.queries)
    async with ingested(args, records, None, {}) as (memory, _):
        result: dict[str, Any] = {"dataset": args.messages.parent.name, "n_queries": len(queries),
                                  "full": await measure(memory, queries, args.depth, RULES)}
        for rule in args.loans_off:
            with ablation.tuned(memory.search_engine, ablation.ABLATIONS[rule]):
                result[f"without {rule}"] = await measure(memory, queries, args.depth, RULES)
        if args.smoke_rerank:
            result["smoke_rerank"] = await smoke_rerank(memory, queries, args.smoke_rerank)
    return result


def table(result: dict[str, Any]) -> str:
    """A markdown row per (system, depth, rule): pool recall and its gain over the first stage's pool."""
    lines = ["| dataset | system | N | rule | pool recall | gain | brought (relevant) by kind |",
             "| --- | --- | ---: | --- | ---: | ---: | --- |"]
    for system, measured in result.items():
        if not isinstance(measured, dict) or "depths" not in measured:
            continue
        for depth, at in measured["depths"].items():
            lines.append(f"| {result['dataset']} | {system} | {depth} | first stage | {at['first_stage']:.4f} | | |")
            for name, rule in at["rules"].items():
                kinds = ", ".join(f"{kind} {count} ({rule['relevant'].get(kind, 0)})"
                                  for kind, count in sorted(rule["brought"].items()))
                lines.append(f"| {result['dataset']} | {system} | {depth} | {name} | {rule['pool_recall']:.4f} | "
                             f"{rule['gain']:+.4f} | {kinds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pool", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory with messages.jsonl, queries.jsonl")
    parser.add_argument("--messages", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--depth", type=lambda value: [int(part) for part in value.split(",")], default=[6, 20, 50])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profile", default="cpu-small")
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--loans-off", type=ablation.rules, action="extend", default=[], metavar="RULE")
    parser.add_argument("--smoke-rerank", type=int, default=0, metavar="N")
    args = parser.parse_args(argv)
    args.messages = args.messages or args.data / "messages.jsonl"
    args.queries = args.queries or args.data / "queries.jsonl"
    result = asyncio.run(run(args))
    print(table(result))
    if "smoke_rerank" in result:
        print(json.dumps(result["smoke_rerank"]))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
