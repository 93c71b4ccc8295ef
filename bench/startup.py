"""How long a start takes: time to open memory and time to the first answer, cold (no ONNX export yet) and warm.

    python -m bench.startup [--json OUT] [--messages 300] [--repeat 1] [--shape tiny|real] [--data DIR]

Each figure comes from a fresh Python process, as a start of the bot or of the CLI is: ``import_s`` (importing
memory's code), ``open_s`` (``Memory.open``: the database, the embedding model, its query export, the indexes and,
where the profile reranks, the reranker's tokenizers), ``first_search_s`` (the first first-stage search, as
``search --no-rerank``), and with a reranker ``first_rerank_s`` (loading the reranker, which exports it to ONNX on a
cold start, and the first reranked search). ``to_open_s`` and ``to_first_answer_s`` count from the moment the
parent started the process (interpreter start and every import included) to memory being open and to the first
answer (the reranked one where there is a reranker). ``cold`` starts with no ONNX export on disk; ``warm`` reuses the
ones the cold start wrote. Both run in the same invocation, on one database of ``--messages`` LoCoMo messages
(embedded beforehand), so ``warm_saves_s`` compares like with like.

The profile is cpu-small (ONNX Runtime reranker, preloaded) with its reranker replaced by a random-weight Qwen3 of
the ``--shape`` asked for (bench/qwen3_random.py, real tokenizer): ``tiny`` by default, ``real`` for the 0.6B shape
(a ~2.4 GB export: minutes and gigabytes). ``--repeat`` runs each start that many times and keeps the median.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA_CANDIDATES = (ROOT.parent / "shared" / "data" / "locomo", Path("/work/shared/data/locomo"))
QUERY = "When did Caroline go to the LGBTQ support group?"
RESULT_PREFIX = "\x1estartup "
GUILD_ID, CHANNEL_ID = 1, 10


def _profile(reranker_dir: Path | None):
    """cpu-small, its reranker the random model at ``reranker_dir``, or off (None)."""
    from cogs.memory.runtime.profile import load_profile

    profile = load_profile("cpu-small")
    if reranker_dir is None:
        return dataclasses.replace(profile, reranker=dataclasses.replace(profile.reranker, enabled=False))
    # No time budget: the first reranked answer scores its candidates, whatever the machine's load.
    return dataclasses.replace(profile, reranker=dataclasses.replace(profile.reranker, model=str(reranker_dir),
                                                                     time_budget_ms=0))


def _records(data_dir: Path, count: int) -> list:
    from cogs.memory.records import MessageRecord

    records = []
    with (data_dir / "messages.jsonl").open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if number > count:
                break
            row = json.loads(line)
            created = datetime.fromisoformat(row["ts"]).replace(tzinfo=UTC)
            records.append(MessageRecord(message_id=number, guild_id=GUILD_ID, channel_id=CHANNEL_ID,
                                         parent_channel_id=None, author_id=hash(row["author"]) % 10_000 + 1,
                                         author_name=row["author"], content=row["text"], created_at=created))
    return records


async def _fill(workdir: Path, data_dir: Path, count: int) -> None:
    """The child that builds the database: ``count`` messages, stored and embedded."""
    from cogs.memory.memory import Memory

    memory = await Memory.open(_profile(None), workdir / "memory.sqlite3", workdir / "indexes")
    try:
        for record in _records(data_dir, count):
            await memory.add(record)
        await memory.flush(vectors=True)
    finally:
        await memory.close()


async def _start(workdir: Path, reranker_dir: Path | None) -> dict:
    """The child that starts: open, first search, and with a reranker the first reranked search."""
    started = time.perf_counter()
    from cogs.memory.memory import Memory
    from cogs.memory.records import SearchFilters

    imported = time.perf_counter()
    memory = await Memory.open(_profile(reranker_dir), workdir / "memory.sqlite3", workdir / "indexes")
    opened = time.perf_counter()
    result = {"import_s": imported - started, "open_s": opened - imported, "opened_at": time.time()}
    try:
        filters = SearchFilters(guild_id=GUILD_ID)
        hits = (await memory.recall(QUERY, filters, rerank=False)).hits
        searched = time.perf_counter()
        result |= {"first_search_s": searched - opened, "hits": len(hits), "answered_at": time.time()}
        if memory.reranker is not None:
            await memory.reranker.aload()  # as the CLI's search: this query waits for the model
            reranked = await memory.recall(QUERY, filters)
            result |= {"first_rerank_s": time.perf_counter() - searched,
                       "reranked": sum(hit.rerank_score is not None for hit in reranked.hits),
                       "answered_at": time.time(),
                       "reranker_backend": memory.reranker.status().backend}
    finally:
        await memory.close()
    return result


def _child(args: argparse.Namespace) -> None:
    if args.child == "fill":
        asyncio.run(_fill(args.workdir, args.data, args.messages))
        return
    reranker_dir = None if args.child == "start" else args.reranker_dir
    result = asyncio.run(_start(args.workdir, reranker_dir))
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def _run_child(*argv: str) -> dict:
    """Run this module as a child; its result, timed from here: ``to_open_s``, ``to_first_answer_s``, and
    ``process_s`` (the whole process, closing and exiting included)."""
    spawned, started = time.time(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bench.startup", *argv], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench.startup child {' '.join(argv)} failed:\n{done.stderr[-4000:]}")
    # Split on newlines only: str.splitlines would also split at the prefix's record separator.
    lines = [line for line in done.stdout.split("\n") if line.startswith(RESULT_PREFIX)]
    if not lines:
        if argv[:2] == ("--child", "fill"):
            return {"process_s": round(wall, 3)}
        raise SystemExit(f"bench.startup child {' '.join(argv)} printed no result:\n{done.stdout[-4000:]}")
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    result |= {"to_open_s": result.pop("opened_at") - spawned, "to_first_answer_s": result.pop("answered_at") - spawned,
               "process_s": wall}
    return {key: round(value, 3) if isinstance(value, float) else value for key, value in result.items()}


def _median(runs: list[dict]) -> dict:
    keys = [key for key, value in runs[0].items() if isinstance(value, (int, float))]
    merged = {key: round(statistics.median(run[key] for run in runs), 3) for key in keys}
    merged |= {key: value for key, value in runs[0].items() if key not in merged}
    return merged


def _progress(text: str) -> None:
    print(f"bench.startup: {text}", file=sys.stderr, flush=True)


def benchmark(args: argparse.Namespace) -> dict:
    import torch

    from bench.qwen3_random import build_random_qwen3

    workdir = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        _progress(f"building a random {args.shape} Qwen3 reranker and a memory of {args.messages} messages")
        reranker_dir = build_random_qwen3(workdir / "reranker", tiny=args.shape == "tiny")
        base = ["--workdir", str(workdir), "--data", str(args.data), "--messages", str(args.messages),
                "--reranker-dir", str(reranker_dir)]
        _run_child("--child", "fill", *base)
        onnx = workdir / "onnx"
        result: dict = {"cpu": _cpu_name(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                        "cores": os.cpu_count(), "load_average_before": round(os.getloadavg()[0], 2),
                        "messages": args.messages, "reranker_shape": args.shape, "repeat": args.repeat}
        for kind in ("start", "start-rerank"):
            runs: dict[str, list[dict]] = {"cold": [], "warm": []}
            for number in range(args.repeat):
                shutil.rmtree(onnx, ignore_errors=True)  # cold: no export on disk
                for state in ("cold", "warm"):
                    _progress(f"{kind} {state} ({number + 1}/{args.repeat})")
                    runs[state].append(_run_child("--child", kind, *base))
            cold, warm = _median(runs["cold"]), _median(runs["warm"])
            result[kind.replace("-", "_")] = {
                "cold": cold, "warm": warm,
                "warm_saves_s": round(cold["to_first_answer_s"] - warm["to_first_answer_s"], 3),
                "exports_on_disk_mb": round(sum(path.stat().st_size for path in onnx.rglob("*") if path.is_file())
                                            / 2**20, 1)}
        result["load_average_after"] = round(os.getloadavg()[0], 2)
        return result
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def _default_data() -> Path:
    return next((path for path in DATA_CANDIDATES if (path / "messages.jsonl").is_file()), DATA_CANDIDATES[0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=_default_data(), help="folder with messages.jsonl (LoCoMo)")
    parser.add_argument("--messages", type=int, default=300, help="messages in the memory that is opened")
    parser.add_argument("--repeat", type=int, default=1, help="starts of each kind; the median is kept")
    parser.add_argument("--shape", choices=("tiny", "real"), default="tiny", help="the random reranker's shape")
    parser.add_argument("--json", type=Path, help="also write the result here")
    parser.add_argument("--child", choices=("fill", "start", "start-rerank"), help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--reranker-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args)
        return
    from bench.rerank import report

    report(benchmark(args), args.json)


if __name__ == "__main__":
    main()
