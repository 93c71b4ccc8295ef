"""A dataset's conversations interleaved in pairs, two per channel: what a channel where two talks run at once (a busy
Discord channel) does to the context rules, on labelled data the project did not write.

python -m bench.interleave [--data ../shared/data/locomo] --out DIR [--seed 25]

Reads DATA/messages.jsonl and DATA/queries.jsonl (bench/recall.py's format), and writes DIR/messages.jsonl and
DIR/queries.jsonl: the channels, in file order, taken two at a time, each pair merged into one channel named
``A+B``. Each channel's messages keep their order; which one speaks next is drawn at random in proportion to the
messages each has left, so the two run side by side to the end. Timestamps are rewritten 30 seconds apart in the
merged order (the order search reads). Every question keeps its evidence and moves to the merged channel. Authors
of the two talks differ, so turn-taking stays high while an answer is no longer always next to its question. Write
DIR outside the repository: LoCoMo's licence (CC BY-NC) keeps it out of the project.
"""

from __future__ import annotations

import argparse
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .dataset import read_jsonl, write_jsonl
from .recall import DEFAULT_DATA

__all__ = ("interleave", "main")

STEP = timedelta(seconds=30)
START = datetime(2024, 1, 1)


def interleave(messages: list[dict[str, Any]], queries: list[dict[str, Any]],
               seed: int = 25) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``messages`` and ``queries`` with the channels merged in pairs (a last odd channel stays alone)."""
    by_channel: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        by_channel.setdefault(str(message["channel"]), []).append(message)
    names = list(by_channel)
    rng = random.Random(seed)
    merged: list[dict[str, Any]] = []
    channel_of: dict[str, str] = {}
    for start in range(0, len(names), 2):
        pair = names[start:start + 2]
        name = "+".join(pair)
        left = [list(reversed(by_channel[channel])) for channel in pair]  # popped from the end: oldest first
        moment = START
        while any(left):
            weights = [len(talk) for talk in left]
            talk = rng.choices(range(len(left)), weights)[0]
            merged.append({**left[talk].pop(), "channel": name, "ts": moment.isoformat()})
            moment += STEP
        channel_of.update((channel, name) for channel in pair)
    moved = [{**query, "channel": channel_of[str(query["channel"])]} for query in queries
             if str(query["channel"]) in channel_of]
    return merged, moved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.interleave", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="dataset directory (default: LoCoMo)")
    parser.add_argument("--out", type=Path, required=True, help="directory to write (outside the repository)")
    parser.add_argument("--seed", type=int, default=25, help="seed of the order the talks interleave in")
    args = parser.parse_args(argv)
    messages, queries = interleave(read_jsonl(args.data / "messages.jsonl"), read_jsonl(args.data / "queries.jsonl"),
                                    args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "messages.jsonl", messages)
    write_jsonl(args.out / "queries.jsonl", queries)
    print(f"{len(messages)} messages in {len({m['channel'] for m in messages})} channels, {len(queries)} questions "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
