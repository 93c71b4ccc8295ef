"""Does the quotation log slow recall down? The same recalls, alternated in one run, without and with noting what each
showed (the log's background writer flushing meanwhile); the bar is p95 added < 1 ms.

    python -m bench.quotations [--json OUT] [--messages 2000] [--recalls 400] [--profile cpu-small]

Real memory core on SQLite (MiniLM, FTS5, FAISS), first stage only (the reranker's time would only hide the
difference). Each recall runs in both modes in a random order; "off" recalls note nothing, "on" recalls note their
hits as another member's search would. The log writes every 2 s (and every 512 notes), as in the bot. Timings on a
loaded machine are inflated and noisy: compare the two modes of one run, and ``note_ms``, the note's own time.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.output import report
from cogs.memory.memory import Memory
from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.runtime.profile import load_profile

WORDS = ("picnic", "lake", "cabin", "printer", "budget", "release", "bug", "deploy", "lunch", "meeting", "garden",
         "train", "ticket", "review", "design", "server", "backup", "holiday", "football", "recipe")
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def records(count: int, rng: random.Random) -> list[MessageRecord]:
    return [MessageRecord(message_id=n, guild_id=1, channel_id=10 + n % 5, parent_channel_id=None,
                          author_id=100 + n % 20, author_name=f"user{n % 20}",
                          content=" ".join(rng.choice(WORDS) for _ in range(12)),
                          created_at=T0 + timedelta(minutes=n)) for n in range(1, count + 1)]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(37)
    profile = load_profile(args.profile)
    profile = replace(profile, reranker=replace(profile.reranker, enabled=False))
    with tempfile.TemporaryDirectory() as workdir:
        memory = await Memory.open(profile, Path(workdir) / "memory.sqlite3", Path(workdir) / "indexes",
                                   reranker=False)
        try:
            for record in records(args.messages, rng):
                await memory.add(record)
            await memory.flush(vectors=True)
            filters = SearchFilters(guild_id=1)
            timings: dict[str, list[float]] = {"off": [], "on": []}
            note_ms: list[float] = []  # the one thing the log adds to a recall: the note itself
            noted = 0
            for number in range(args.recalls):
                query = " ".join(rng.sample(WORDS, 3))
                for mode in rng.sample(["off", "on"], 2):
                    started = time.perf_counter()
                    recall = await memory.recall(query, filters, 10, rerank=False)
                    if mode == "on":
                        noting = time.perf_counter()
                        noted += memory.quotations.note(recall.hits, "search", 999)
                        note_ms.append(1000 * (time.perf_counter() - noting))
                    timings[mode].append(1000 * (time.perf_counter() - started))
                if number % 20 == 0:
                    await asyncio.sleep(0)
            await memory.quotations.flush()
            kept = sum((await memory.store.quotation_counts(1)).values())
        finally:
            await memory.close()
    p95 = {mode: percentile(values, 0.95) for mode, values in timings.items()}
    return {"bench": "quotations", "messages": args.messages, "recalls": args.recalls, "profile": profile.name,
            "noted": noted, "kept": kept,
            "recall_ms": {mode: {"p50": round(statistics.median(v), 3), "p95": round(p95[mode], 3)}
                          for mode, v in timings.items()},
            "p95_added_ms": round(p95["on"] - p95["off"], 3),
            "note_ms": {"p50": round(statistics.median(note_ms), 4), "p95": round(percentile(note_ms, 0.95), 4),
                        "max": round(max(note_ms), 4)}, "bar_ms": 1.0}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.quotations", description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--recalls", type=int, default=400)
    parser.add_argument("--profile", default="cpu-small", help="profile name or .toml path (reranker is off)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = asyncio.run(run(args))
    report(figures, args.json)


if __name__ == "__main__":
    main()
