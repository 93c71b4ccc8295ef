"""A dataset's conversations interleaved, two (or ``--talks``) per channel: what a channel where several talks run at
once (a busy Discord channel) does to the context rules, on labelled data the project did not write.

python -m bench.interleave [--data ../shared/data/locomo] --out DIR [--seed 25] [--talks 2]

Reads DATA/messages.jsonl and DATA/queries.jsonl (bench/recall.py's format), and writes DIR/messages.jsonl and
DIR/queries.jsonl: the channels, in file order, taken ``--talks`` at a time, each group merged into one channel
named ``A+B+...``. Each channel's messages keep their order; which one speaks next is drawn at random in proportion
to the messages each has left, so the talks run side by side to the end. Timestamps are rewritten 30 seconds apart
in the merged order (the order search reads). Every question keeps its evidence and moves to the merged channel.
Authors of the talks differ, so each talk's turn-taking stays while an answer is less often next to its question
(with five talks, a fifth of next messages belong to the same talk). The questions are of the bot's own kind: a
member's question that is not a message of the channel, its evidence labelled by people. Write DIR outside the
repository: LoCoMo's licence (CC BY-NC) keeps it out of the project.
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


def interleave(messages: list[dict[str, Any]], queries: list[dict[str, Any]], seed: int = 25,
               talks: int = 2) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``messages`` and ``queries`` with the channels merged ``talks`` at a time (the last group holds what is
    left)."""
    if talks < 1:
        raise ValueError("talks must be at least 1")
    by_channel: dict[str, list[dict[str, Any]]] = {}
    for message in messages:
        by_channel.setdefault(str(message["channel"]), []).append(message)
    names = list(by_channel)
    rng = random.Random(seed)
    merged: list[dict[str, Any]] = []
    channel_of: dict[str, str] = {}
    for start in range(0, len(names), talks):
        group = names[start:start + talks]
        name = "+".join(group)
        left = [list(reversed(by_channel[channel])) for channel in group]  # popped from the end: oldest first
        moment = START
        while any(left):
            weights = [len(talk) for talk in left]
            talk = rng.choices(range(len(left)), weights)[0]
            merged.append({**left[talk].pop(), "channel": name, "ts": moment.isoformat()})
            moment += STEP
        channel_of.update((channel, name) for channel in group)
    moved = [{**query, "channel": channel_of[str(query["channel"])]} for query in queries
             if str(query["channel"]) in channel_of]
    return merged, moved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.interleave", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="dataset directory (default: LoCoMo)")
    parser.add_argument("--out", type=Path, required=True, help="directory to write (outside the repository)")
    parser.add_argument("--seed", type=int, default=25, help="seed of the order the talks interleave in")
    parser.add_argument("--talks", type=int, default=2, help="talks merged into each channel (default 2)")
    args = parser.parse_args(argv)
    messages, queries = read_jsonl(args.data / "messages.jsonl"), read_jsonl(args.data / "queries.jsonl")
    try:
        messages, queries = interleave(messages, queries, args.seed, args.talks)
    except ValueError as error:  # interleave's own check of --talks
        parser.error(str(error))
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "messages.jsonl", messages)
    write_jsonl(args.out / "queries.jsonl", queries)
    print(f"{len(messages)} messages in {len({m['channel'] for m in messages})} channels, {len(queries)} questions "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
