"""Benchmark: the store reads the reranker's pool makes per recall, lending from what the first stage read
(first_stage.ContextRead) against reading every lender's context again, in one run on the same searches.

python -m bench.pool_reads [--data DIR | --messages M.jsonl --queries Q.jsonl] [--depth 20] [--rounds 3]
                           [--profile cpu-small] [--candidates 100] [--db DIR] [--json OUT]

Each query is searched once (hybrid, as bench.pool does); its pool of ``--depth`` is then built both ways,
``--rounds`` times, alternating which goes first: ``read again`` (the store's ``context`` for every lender, as
before) and ``handed`` (only for the lenders the first stage did not read). Prints JSON: context reads and lenders
read per way, how many pools came out identical (all of them, or the handing is wrong), and each way's pool time
(median of the rounds, summed over queries) with their ratio. Times on a loaded box are inflated: read the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cogs.memory.memory import Memory
from cogs.memory.records import SearchFilters
from cogs.memory.search.first_stage import ContextRead
from cogs.memory.search.pool import Pooled, pool

from .dataset import Query, load_dataset
from .pool import _filters
from .recall import DEFAULT_DATA, ingested


class CountingReader:
    """The search engine's context reads, counted (calls and message ids asked for)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.calls = 0
        self.lenders = 0

    async def context(self, message_ids: Sequence[int], filters: SearchFilters) -> Any:
        self.calls += 1
        self.lenders += len(message_ids)
        return await self.engine.context(message_ids, filters)

    async def channel_structure(self, guild_id: int, channel_id: int) -> Any:
        return await self.engine.channel_structure(guild_id, channel_id)


async def _timed_pool(reader: CountingReader, hits: list[Any], filters: SearchFilters, depth: int, tuning: Any,
                      read: ContextRead | None) -> tuple[list[Pooled], float]:
    started = time.perf_counter()
    pooled = await pool(reader, hits, filters, depth, tuning, read)
    return pooled, time.perf_counter() - started


async def measure(memory: Memory, queries: list[Query], depth: int, rounds: int) -> dict[str, Any]:
    engine = memory.search_engine
    again, handed = CountingReader(engine), CountingReader(engine)
    seconds: dict[str, float] = {"read again": 0.0, "handed": 0.0}
    identical = 0
    for query in queries:
        filters = _filters(query)
        searched = await engine.searched(query.question, filters, depth, asked_at=query.asked_at)
        hits = list(searched.hits)
        times: dict[str, list[float]] = {"read again": [], "handed": []}
        pools: dict[str, list[Pooled]] = {}
        for round_ in range(rounds):
            ways = [("read again", again, None), ("handed", handed, searched.context)]
            for name, reader, read in ways if round_ % 2 == 0 else reversed(ways):
                pools[name], took = await _timed_pool(reader, hits, filters, depth, engine.tuning, read)
                times[name].append(took)
        identical += pools["read again"] == pools["handed"]
        for name, taken in times.items():
            seconds[name] += statistics.median(taken)
    per_way = {name: {"context_reads": reader.calls // rounds, "lenders_read": reader.lenders // rounds,
                      "pool_ms": round(1000 * seconds[name], 1)}
               for name, reader in (("read again", again), ("handed", handed))}
    return {"queries": len(queries), "depth": depth, "identical_pools": identical, **per_way,
            "time_ratio": round(seconds["handed"] / seconds["read again"], 3) if seconds["read again"] else None}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    records, queries = load_dataset(args.messages, args.queries)
    async with ingested(args, records, None, {}) as (memory, _):
        return {"dataset": args.messages.parent.name, **await measure(memory, queries, args.depth, args.rounds)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pool_reads", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory with messages.jsonl, queries.jsonl")
    parser.add_argument("--messages", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", default="cpu-small")
    parser.add_argument("--candidates", type=int, default=100)
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.messages = args.messages or args.data / "messages.jsonl"
    args.queries = args.queries or args.data / "queries.jsonl"
    result = asyncio.run(run(args))
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
