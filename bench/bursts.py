"""A dataset's messages split at their sentences, each sentence its own message by the same author: two people who
write in bursts, as many do in chat apps and on Discord, on labelled data the project did not write.

python -m bench.bursts [--data ../shared/data/locomo] --out DIR

Reads DATA/messages.jsonl and DATA/queries.jsonl (bench/recall.py's format) and writes DIR/messages.jsonl and
DIR/queries.jsonl: a message of several sentences (split where ". ", "! " or "? " is followed by a capital) becomes one
message per sentence, two seconds apart, the first keeping the message's id and the others ``ID#1``, ``ID#2``...; a
question's evidence is every piece of its evidence messages (recall@k then counts the pieces found; MRR@10 reads the
first). Write DIR outside the repository: LoCoMo's licence (CC BY-NC) keeps it out of the project.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .dataset import read_jsonl, write_jsonl
from .recall import DEFAULT_DATA

__all__ = ("main", "split_into_bursts")

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
STEP = timedelta(seconds=2)


def split_into_bursts(messages: list[dict[str, Any]],
                      queries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``messages`` one sentence a message, and ``queries`` with each evidence id replaced by its pieces' ids."""
    split: list[dict[str, Any]] = []
    pieces: dict[str, list[str]] = {}
    for message in messages:
        sentences = [part for part in SENTENCE_END.split(str(message["text"])) if part.strip()] or [message["text"]]
        moment = datetime.fromisoformat(str(message["ts"]))
        ids = [str(message["msg_id"]) if i == 0 else f"{message['msg_id']}#{i}" for i in range(len(sentences))]
        split.extend({**message, "msg_id": piece, "text": sentence, "ts": (moment + i * STEP).isoformat()}
                     for i, (piece, sentence) in enumerate(zip(ids, sentences)))
        pieces[str(message["msg_id"])] = ids
    moved = [{**query, "relevant": [piece for evidence in query["relevant"]
                                    for piece in pieces.get(str(evidence), [str(evidence)])]} for query in queries]
    return split, moved


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bursts", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="dataset directory (default: LoCoMo)")
    parser.add_argument("--out", type=Path, required=True, help="directory to write (outside the repository)")
    args = parser.parse_args(argv)
    messages, queries = split_into_bursts(read_jsonl(args.data / "messages.jsonl"),
                                          read_jsonl(args.data / "queries.jsonl"))
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "messages.jsonl", messages)
    write_jsonl(args.out / "queries.jsonl", queries)
    print(f"{len(messages)} messages, {len(queries)} questions -> {args.out}")


if __name__ == "__main__":
    main()
