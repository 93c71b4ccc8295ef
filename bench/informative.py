"""What informativeness (cogs/memory/search/informative.py) reads of a dataset's messages: the worth in terms of
answer-bearing (evidence) messages against all messages and against content-free ones, per dataset.

python -m bench.informative DIR [DIR ...] [--nothing-at 0.5] [--full-at 1.0]

Each DIR holds bench/recall.py's messages.jsonl (and queries.jsonl, whose ``relevant`` ids are the evidence; none
for IRC exported by bench.irc). **Content-free** is read here apart from the rule, by a list of chat fillers
(``FILLERS``): a message none of whose terms is anything else (an emoji or a bare link has no term). Prints, per
dataset, the share of messages that are content-free, quantiles of the worth of evidence and of content-free
messages, and the share of evidence and of content-free messages that keep less than full weight at ``--full-at``, and the mean share of a loan each kind borrows.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cogs.memory.search.informative import terms_of, vocabulary, worth as worth_of

__all__ = ("FILLERS", "content_free", "main", "worths")

# Chat fillers in the languages of the fixtures, as keyword terms (stemmed forms are what terms_of gives).
FILLERS = frozenset("""
    nice gg lol lmao lmfao rofl ok okay k kk yes yeah yep yup ya yea nope nah thanks thank thx ty np yw wow cool
    great good true same sure hmm hm ah oh ooh omg rip xd haha hahaha hehe heh welcome hi hello hey bye cya gn gm
    congrat congrats grats wp glhf brb afk ikr idk tbh fr damn dang sweet awesom awesome
    哈哈 哈哈哈 好的 谢谢 嗯嗯 草 牛逼 厉害 晚安 早安 可以 ᄏᄏ ᄒᄒ 감사 ありがとう
""".split())


def content_free(content: str) -> bool:
    """A message with no term beyond chat fillers (an emoji, a bare link, "nice", "gg", "ok")."""
    return all(term in FILLERS for term in terms_of(content))


def worths(messages: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Each message's worth in terms (informativeness before ``full_at`` and the cap), by msg_id, each channel's
    vocabulary read from its last 2,000 messages as the first stage reads it."""
    channels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for message in messages:
        channels[str(message["channel"])].append(message)
    worth: dict[str, float] = {}
    for channel in channels.values():
        known = vocabulary(str(message["text"]) for message in channel[-2000:])
        for message in channel:
            worth[str(message["msg_id"])] = worth_of(str(message["text"]), known)
    return worth


def _quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    values = sorted(values)
    return {f"p{int(q * 100)}": round(values[min(int(q * len(values)), len(values) - 1)], 3)
            for q in (0.05, 0.1, 0.25, 0.5, 0.9)}


def _weight(worth: float, nothing_at: float, full_at: float) -> float:
    # The share of a loan a message of this worth borrows (search/informative.informativeness).
    return min(max((worth - nothing_at) / (full_at - nothing_at), 0.0), 1.0)


def measure(data: Path, nothing_at: float, full_at: float) -> dict[str, Any]:
    from .dataset import read_jsonl

    messages = read_jsonl(data / "messages.jsonl")
    queries = read_jsonl(data / "queries.jsonl") if (data / "queries.jsonl").exists() else []
    worth = worths(messages)
    evidence = {str(piece) for query in queries for piece in query["relevant"]}
    free = [str(message["msg_id"]) for message in messages if content_free(str(message["text"]))]
    return {
        "messages": len(messages), "content_free_share": round(len(free) / max(len(messages), 1), 4),
        "evidence": len(evidence),
        "worth_evidence": _quantiles([worth[m] for m in evidence if m in worth]),
        "worth_content_free": _quantiles([worth[m] for m in free]),
        "worth_all": _quantiles(list(worth.values())),
        "evidence_below_full": round(sum(worth.get(m, 0.0) < full_at for m in evidence) / max(len(evidence), 1), 4),
        "content_free_below_full": round(sum(worth[m] < full_at for m in free) / max(len(free), 1), 4),
        "evidence_mean_weight": round(sum(_weight(worth.get(m, 0.0), nothing_at, full_at) for m in evidence)
                                      / max(len(evidence), 1), 4),
        "content_free_mean_weight": round(sum(_weight(worth[m], nothing_at, full_at) for m in free)
                                          / max(len(free), 1), 4),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.informative", description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, nargs="+")
    parser.add_argument("--nothing-at", type=float, default=0.5)
    parser.add_argument("--full-at", type=float, default=1.0)
    args = parser.parse_args(argv)
    print(json.dumps({str(data): measure(data, args.nothing_at, args.full_at) for data in args.data}, indent=1))


if __name__ == "__main__":
    main()
