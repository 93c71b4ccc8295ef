"""Does the bot's event loop stay responsive under load? A 5,000-message burst and 10 recalls through the real cog.

    python -m bench.loop [--json OUT] [--messages 5000] [--recalls 10] [--data ../shared/data/locomo]

The bot runs on dpytest's fake gateway (real discord.py state and dispatch, no network), with the real memory core
(real MiniLM embeddings, SQLite, FAISS) and a tiny random-weight Qwen3 reranker with the real tokenizer. A heartbeat
task measures every gap between event-loop ticks; the bar is max_gap_ms < 50.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HEARTBEAT_S = 0.001
FEED_CHUNK = 1  # the gateway delivers events one websocket frame at a time: yield to the loop after each
DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo"
BAR_MAX_GAP_MS = 50.0


class Heartbeat:
    """Wakes every millisecond and records how long each wake-up actually took to come."""

    def __init__(self) -> None:
        self.gaps_ms: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _beat(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            now = time.perf_counter()
            self.gaps_ms.append((now - last) * 1000)
            last = now

    def start(self) -> None:
        self._task = asyncio.create_task(self._beat())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise


def chat_lines(data_dir: Path, count: int) -> tuple[list[tuple[str, str]], list[str]]:
    """(author, text) pairs and questions from a messages.jsonl/queries.jsonl pair, or synthetic ones."""
    messages_path, queries_path = data_dir / "messages.jsonl", data_dir / "queries.jsonl"
    if messages_path.exists() and queries_path.exists():
        with messages_path.open(encoding="utf-8") as file:
            lines = [(row["author"], row["text"]) for row in map(json.loads, file)]
        with queries_path.open(encoding="utf-8") as file:
            questions = [row["question"] for row in map(json.loads, file)]
    else:
        lines = [(f"user{i % 7}", f"message {i} about topic {i % 97} and plan {i % 13}") for i in range(count)]
        questions = [f"what was said about topic {i}?" for i in range(50)]
    while len(lines) < count:
        lines += lines
    return lines[:count], questions


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(fraction * len(ordered)), len(ordered) - 1)] if ordered else 0.0


async def build_bot(workdir: Path):
    import discord.ext.test as dpytest

    from bench.qwen3_random import build_random_qwen3
    from bot import MemoryBot, freeze_startup_objects
    from cogs.memory.memory import Memory
    from cogs.memory.runtime.profile import MemoryProfile, RerankerSettings

    model_dir = await asyncio.to_thread(build_random_qwen3, workdir / "tiny-reranker", tiny=True)
    profile = MemoryProfile(
        name="bench-tiny",
        device="cpu",
        dtype="float32",
        reranker=RerankerSettings(model=str(model_dir), batch_size=8, candidates=20, top_k=5, time_budget_ms=2000,
                                  preload=True),  # as every shipped profile that reranks
    )
    bot = MemoryBot(db_path=workdir / "memory.sqlite3", index_dir=workdir / "indexes",
                    profile_choice_path=workdir / "profile.txt", open_memory=False)
    await bot._async_setup_hook()
    dpytest.configure(bot, guilds=1, text_channels=4, voice_channels=0, members=8)
    bot._connection.loop = asyncio.get_running_loop()  # dpytest's state predates discord.py 2.7's loop handling
    await bot.setup_hook()
    await bot.attach_memory(await Memory.open(profile, bot.db_path, bot.index_dir))
    freeze_startup_objects()  # as the bot does once memory has loaded
    bot.collect_garbage.start()
    return bot


async def drive(bot, lines: list[tuple[str, str]], questions: list[str], recalls: int) -> dict[str, float]:
    import discord.ext.test as dpytest
    from discord.ext.test import backend

    config = dpytest.get_config()
    channels, members = config.channels, config.members
    cog = bot.get_cog("MemoryListeners")
    # Ten askers in a few channels would hit the per-user/per-channel cooldowns; the bench measures the loop.
    cog.user_cooldown._cooldown.rate = cog.channel_cooldown._cooldown.rate = 1_000_000
    recall_ms: list[float] = []
    all_answered = asyncio.Event()
    recall_and_reply = cog.recall_and_reply

    async def timed_recall_and_reply(message) -> None:
        t0 = time.perf_counter()
        await recall_and_reply(message)
        recall_ms.append((time.perf_counter() - t0) * 1000)
        if len(recall_ms) == recalls:
            all_answered.set()

    cog.recall_and_reply = timed_recall_and_reply  # the listener's own call, timed end to end
    heartbeat = Heartbeat()
    heartbeat.start()
    started = time.perf_counter()
    recall_every = max(len(lines) // (recalls + 1), 1)
    asked = 0
    for number, (_, text) in enumerate(lines):
        backend.make_message(text, members[number % len(members)], channels[number % len(channels)])
        if number and number % recall_every == 0 and asked < recalls:
            question = f"{bot.user.mention} {questions[asked % len(questions)]}"
            backend.make_message(question, members[asked % len(members)], channels[asked % len(channels)])
            asked += 1
        if number % FEED_CHUNK == 0:
            await asyncio.sleep(0)
    fed = time.perf_counter()
    if recalls:
        await all_answered.wait()
    await bot.memory.flush(vectors=True)
    ingested = time.perf_counter()
    await heartbeat.stop()
    gaps = heartbeat.gaps_ms
    return {
        "messages": len(lines),
        "recalls": len(recall_ms),
        "max_gap_ms": round(max(gaps), 2),
        "p99_gap_ms": round(percentile(gaps, 0.99), 2),
        "ingest_msgs_per_s": round(len(lines) / (ingested - started), 1),
        "recall_p50_ms": round(statistics.median(recall_ms), 1) if recall_ms else 0.0,
        "recall_p95_ms": round(percentile(recall_ms, 0.95), 1),
        "feed_s": round(fed - started, 2),
        "heartbeat_ms": HEARTBEAT_S * 1000,
    }


async def run(args: argparse.Namespace) -> dict[str, float]:
    import discord.ext.test as dpytest

    lines, questions = chat_lines(args.data, args.messages)
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as tmp:
        bot = await build_bot(Path(tmp))
        try:
            return await drive(bot, lines, questions, args.recalls)
        finally:
            bot.collect_garbage.cancel()
            await dpytest.empty_queue()
            await bot.memory.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loop", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--recalls", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with messages.jsonl and queries.jsonl")
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import cogs.memory  # noqa: F401 - its OpenMP settings must be in place before the reranker's torch loads
    logging.basicConfig(level=logging.WARNING)
    from launcher import tune_interpreter

    tune_interpreter()  # as `python launcher.py` runs
    result = asyncio.run(run(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    if result["max_gap_ms"] >= BAR_MAX_GAP_MS:
        print(f"max_gap_ms {result['max_gap_ms']} is over the {BAR_MAX_GAP_MS} ms bar", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
