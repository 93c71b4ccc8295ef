"""How often each loan of the first stage lends to a message that really belongs with its lender, measured on chat
annotated by people: the Ubuntu IRC disentanglement corpus (real multi-party chat, each message's reply-to labelled;
Kummerfeld et al., ACL 2019, CC BY 4.0), and LoCoMo split into bursts (two people, each turn answering the last).

python -m bench.irc [--irc ../shared/data/ubuntu-irc] [--locomo ../shared/data/locomo] [--json OUT]
                    [--export DIR --files N --split dev|test|train|channel-two]

Read by path, never copied into the repository. A loan is a (lender, target) pair the first stage would form
(search/loans.py, context.py): the neighbour spread (a message and its next or previous one), the question loan (a
message that asks, to what ``questions.answers`` guesses may answer it) and the reply loan (a message that names its
lender's author, ``nick: ...`` on IRC, as a Discord reply names the message). Its **precision** is P(the target
responds to the lender, or the lender to the target) — ``linked`` — and P(both are in one conversation) —
``same_conversation`` — under each condition the project can read without labels: author change, question form, time
gap, a mention, distance. ``base`` is the same rate over every pair at the same distances, the rate a loan that read
nothing would have. On LoCoMo bursts a pair is linked when the target's turn answers the lender's (the next turn, as
LoCoMo is written) or is the same turn.

``--export DIR`` writes the first ``--files`` IRC logs of ``--split``'s folder (``dev/`` unless told; ``test/`` and
``train/`` are logs no recall rule was set by) as bench/recall.py's messages.jsonl (with
``reply_to`` where a message names an earlier author's latest message, as a Discord reply would) and queries.jsonl:
each annotated question of five words or more, searched with its own words, its relevant messages the other authors'
responses to it as annotated — the case the question loan is for, on real multi-party chat (the question itself
ranks first and counts as not relevant, in every variant alike); queries-with-content.jsonl the same questions,
their relevant messages only the responses with a word beyond chat fillers.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from cogs.memory.language import questions
from cogs.memory.search.structure import EXCHANGE_WINDOW, Posted, measure

from .bursts import split_into_bursts
from .informative import content_free
from .dataset import read_jsonl, write_jsonl
from .recall import DEFAULT_DATA

__all__ = ("Line", "Log", "main", "measure_irc", "measure_locomo", "read_log")

DEFAULT_IRC = DEFAULT_DATA.parent / "ubuntu-irc"
_MESSAGE = re.compile(r"^\[(\d\d):(\d\d)\] <([^>]+)> ?(.*)$")
_ADDRESSED = re.compile(r"^\s*([^\s:,]+)\s*[:,]")
ANNOTATED_FROM = 1000
REPLY_WINDOW = 3  # RankingTuning.reply_window


@dataclass(frozen=True, slots=True)
class Line:
    """A chat message of a log (system lines are left out, as a bot stores none): its line number, minute, nick."""

    index: int
    minute: int
    author: str
    text: str
    asks: bool


@dataclass(frozen=True, slots=True)
class Log:
    """A log's messages in order, its annotated links (earlier, later) and each annotated message's conversation."""

    lines: list[Line]
    links: frozenset[tuple[int, int]]
    conversation: dict[int, int]

    def annotated(self, later: Line) -> bool:
        return later.index >= ANNOTATED_FROM

    def linked(self, one: Line, other: Line) -> bool:
        a, b = sorted((one.index, other.index))
        return (a, b) in self.links

    def together(self, one: Line, other: Line) -> bool | None:
        a, b = self.conversation.get(one.index), self.conversation.get(other.index)
        return None if a is None or b is None else a == b


def read_log(raw: Path) -> Log:
    """A log's messages (``NAME.raw.txt``) and links (``NAME.annotation.txt``), conversations by union of links."""
    lines: list[Line] = []
    day = 0
    last = -1
    # Lines are counted by "\n" alone, as the annotations count them: str.splitlines would also split at the form
    # feeds, \x1c-\x1e and U+2028 that some messages hold, and shift every later line's number.
    for number, text in enumerate(raw.read_bytes().decode("utf-8", errors="replace").split("\n")):
        match = _MESSAGE.match(text)
        if not match:
            continue
        minute = int(match[1]) * 60 + int(match[2]) + day
        if minute < last:  # past midnight
            day += 24 * 60
            minute += 24 * 60
        last = minute
        lines.append(Line(number, minute, match[3], match[4], questions.asks(match[4])))
    links: set[tuple[int, int]] = set()
    parent: dict[int, int] = {}

    def root(node: int) -> int:
        while parent.setdefault(node, node) != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    annotation = raw.with_name(raw.name.replace(".raw.txt", ".annotation.txt"))
    for text in annotation.read_text(encoding="utf-8").splitlines():
        parts = text.split()
        if len(parts) < 2:
            continue
        a, b = sorted((int(parts[0]), int(parts[1])))
        parent[root(b)] = root(a)
        if a != b:
            links.add((a, b))
    conversation = {node: root(node) for node in list(parent) if node >= ANNOTATED_FROM}
    return Log(lines, frozenset(links), conversation)


class Tally:
    """Counts of pairs, linked pairs and same-conversation pairs under named conditions."""

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])

    def add(self, condition: str, linked: bool, together: bool | None) -> None:
        row = self.counts[condition]
        row[0] += 1
        row[1] += linked
        if together is not None:
            row[2] += 1
            row[3] += together

    def table(self) -> dict[str, dict[str, float]]:
        return {condition: {"pairs": n, "linked": round(hits / n, 4) if n else 0.0,
                            "same_conversation": round(same / judged, 4) if judged else 0.0}
                for condition, (n, hits, judged, same) in sorted(self.counts.items())}


def gap_bucket(minutes: int) -> str:
    return "0min" if minutes <= 0 else "1min" if minutes == 1 else "2-4min" if minutes < 5 else "5+min"


def _addressed(line: Line, authors: set[str]) -> str | None:
    """The earlier author a message opens by naming (``nick: ...``), if any."""
    match = _ADDRESSED.match(line.text)
    return match[1] if match and match[1] in authors and match[1] != line.author else None


def _talking(lines: Sequence[Line], addressing: Sequence[str | None], i: int, author: str) -> tuple[str, ...]:
    """Where neither a question (line ``i``) nor its guessed answer by ``author`` names anyone: whether the two named
    each other in the ``structure.EXCHANGE_WINDOW`` lines before (search/context.py ``addressed``), and whether the
    question is put to everyone (questions.to_everyone)."""
    if addressing[i] is not None:
        return ()
    pair = {(lines[i].author, author), (author, lines[i].author)}
    talking = any((lines[k].author, addressing[k]) in pair for k in range(max(0, i - EXCHANGE_WINDOW), i))
    room = "to everyone" if questions.to_everyone(lines[i].text) else "to no one in particular"
    return (f"neither names, talking={talking}", f"neither names, talking={talking}, {room}")


def _pair(tally: Tally, log: Log, kind: str, lender: Line, target: Line, conditions: Iterable[str]) -> None:
    later = max(lender, target, key=lambda line: line.index)
    if not log.annotated(later):
        return
    linked, together = log.linked(lender, target), log.together(lender, target)
    tally.add(kind, linked, together)
    for condition in conditions:
        tally.add(f"{kind} | {condition}", linked, together)


def measure_irc(logs: Sequence[Log]) -> dict[str, dict[str, float]]:
    """Every loan's precision over ``logs`` (see the module's docstring), by condition."""
    tally = Tally()
    for log in logs:
        lines = log.lines
        addressing = [_addressed(line, {other.author for other in lines[max(0, i - 50):i]})
                      for i, line in enumerate(lines)]
        for i, line in enumerate(lines):
            earlier_authors = {other.author for other in lines[max(0, i - 50):i]}
            addressed = addressing[i]
            for distance in range(1, REPLY_WINDOW + 2):  # the base: every pair the window reaches
                if i + distance < len(lines):
                    other = lines[i + distance]
                    change = "other author" if other.author != line.author else "same author"
                    _pair(tally, log, "base", line, other, (f"d={distance}", change))
            if i + 1 < len(lines):
                following = lines[i + 1]
                change = "other author" if following.author != line.author else "same author"
                gap = gap_bucket(following.minute - line.minute)
                named = _addressed(following, earlier_authors | {line.author})
                mention = ("names lender" if named == line.author else "names another" if named else "names no one")
                _pair(tally, log, "neighbour", line, following,
                      (change, gap, f"{change}, {gap}", mention, f"lender asks={line.asks}",
                       f"{change}, {mention}"))
            if line.asks:
                # The one asked, as the first stage reads it (search/context.neighbours_in): whom the question names,
                # else the author of the line it follows.
                previous = addressed if addressed is not None else (lines[i - 1].author if i else None)
                after = [(j, lines[j].author) for j in range(i + 1, min(i + 1 + REPLY_WINDOW, len(lines)))]
                for place, j in enumerate(questions.answers(line.author, previous, after)):
                    target = lines[j]
                    gap = gap_bucket(target.minute - line.minute)
                    named = _addressed(target, earlier_authors | {line.author})
                    mention = ("names asker" if named == line.author else "names another" if named
                               else "names no one")
                    asked = ("question names it" if addressed == target.author else "question names another"
                             if addressed else "question names no one")
                    _pair(tally, log, "question", line, target,
                          ("nearest other" if place == 0 else "the one asked", f"d={j - i}", gap, mention,
                           f"{mention}, {gap}", asked, f"{mention}, {asked}",
                           *(_talking(lines, addressing, i, target.author) if named is None else ())))
            if addressed is not None:  # a reply: the named author's latest message before it
                lender = next((lines[j] for j in range(i - 1, max(-1, i - 51), -1) if lines[j].author == addressed),
                              None)
                if lender is not None:
                    _pair(tally, log, "reply", lender, line,
                          (f"lender asks={lender.asks}", gap_bucket(line.minute - lender.minute)))
    return tally.table()


def measure_locomo(data: Path) -> dict[str, dict[str, float]]:
    """The question loan's and the neighbour spread's precision on LoCoMo split into bursts: linked when the
    target's turn is the lender's own or the one after it (each LoCoMo turn answers the one before)."""
    messages, queries = split_into_bursts(read_jsonl(data / "messages.jsonl"), read_jsonl(data / "queries.jsonl"))
    evidence = {piece for query in queries for piece in query["relevant"]}
    tally = Tally()
    channels: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for message in messages:
        channels[str(message["channel"])].append(message)
    for channel in channels.values():
        turn = [0] * len(channel)
        for i in range(1, len(channel)):
            turn[i] = turn[i - 1] + (channel[i]["author"] != channel[i - 1]["author"])
        asks = [questions.asks(str(message["text"])) for message in channel]

        def add(kind: str, i: int, j: int, conditions: Iterable[str]) -> None:
            linked = 0 <= turn[j] - turn[i] <= 1
            both = str(channel[i]["msg_id"]) in evidence and str(channel[j]["msg_id"]) in evidence
            tally.add(kind, linked, both)
            for condition in conditions:
                tally.add(f"{kind} | {condition}", linked, both)

        for i in range(len(channel)):
            for distance in range(1, REPLY_WINDOW + 2):
                if i + distance < len(channel):
                    add("base", i, i + distance, (f"d={distance}",))
            if i + 1 < len(channel):
                same = channel[i + 1]["author"] == channel[i]["author"]
                add("neighbour", i, i + 1, ("same author" if same else "other author",))
            if asks[i]:
                previous = channel[i - 1]["author"] if i else None
                after = [(j, channel[j]["author"]) for j in range(i + 1, min(i + 1 + REPLY_WINDOW, len(channel)))]
                for place, j in enumerate(questions.answers(channel[i]["author"], previous, after)):
                    add("question", i, j, ("nearest other" if place == 0 else "the one asked", f"d={j - i}"))
    # same_conversation here: both lender and target are evidence of LoCoMo's questions (how often a loan joins two
    # answer-bearing messages), not a conversation label.
    return tally.table()


def structure_of(logs: Sequence[Log]) -> dict[str, float]:
    """The logs' structure as the first stage reads a channel's (search/structure.py), pooled over the logs."""
    ids: dict[str, int] = {}
    read = measure([Posted(line.index, ids.setdefault(line.author, len(ids)), None, line.asks) for line in log.lines]
                   for log in logs)
    return {"messages": read.messages, "turn_taking": read.turn_taking, "chance_turn_taking": read.chance_turn_taking,
            "dialogue": read.dialogue, "mean_burst": read.mean_burst, "questions": read.questions}


def export(logs: Sequence[Log], names: Sequence[str], out: Path) -> int:
    """The logs as bench/recall.py's messages.jsonl (a channel a log), ``reply_to`` from ``nick:`` mentions."""
    rows: list[dict[str, Any]] = []
    start = datetime(2024, 1, 1)
    for log, name in zip(logs, names):
        latest: dict[str, str] = {}
        for line in log.lines:
            msg_id = f"{name}/{line.index}"
            row: dict[str, Any] = {"channel": name, "msg_id": msg_id, "author": line.author,
                                   "ts": start.replace(hour=0).isoformat()[:11] + _clock(line.minute, line.index),
                                   "text": line.text or "."}
            addressed = _addressed(line, set(latest))
            if addressed is not None:
                row["reply_to"] = latest[addressed]
            latest[line.author] = msg_id
            rows.append(row)
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "messages.jsonl", rows)
    write_jsonl(out / "queries.jsonl", _questions(logs, names, with_content=False))
    write_jsonl(out / "queries-with-content.jsonl", _questions(logs, names, with_content=True))
    return len(rows)


def _questions(logs: Sequence[Log], names: Sequence[str], with_content: bool) -> list[dict[str, Any]]:
    """Each annotated message that asks, in five words or more, as a query whose relevant messages are the other
    authors' messages annotated as responding to it: what the question loan lends to, labelled by people
    (``with_content``: only the responses with a word beyond chat fillers, bench.informative.content_free: "yes",
    "oh", "yea" respond but hold nothing to find)."""
    queries: list[dict[str, Any]] = []
    for log, name in zip(logs, names):
        by_index = {line.index: line for line in log.lines}
        for line in log.lines:
            if not (log.annotated(line) and line.asks and len(line.text.split()) >= 5):
                continue
            answers = [f"{name}/{b}" for a, b in sorted(log.links)
                       if a == line.index and b in by_index and by_index[b].author != line.author
                       and not (with_content and content_free(by_index[b].text))]
            if answers:
                queries.append({"channel": name, "qid": f"{name}/q{line.index}", "question": line.text,
                                "category": "irc", "relevant": answers})
    return queries


def _clock(minute: int, index: int) -> str:
    minute %= 24 * 60
    return f"{minute // 60:02d}:{minute % 60:02d}:{index % 60:02d}"


def _logs(root: Path, folders: Sequence[str], limit: int | None = None) -> tuple[list[Log], list[str]]:
    raws = sorted(raw for folder in folders for raw in (root / folder).glob("*.raw.txt"))[:limit]
    return [read_log(raw) for raw in raws], [raw.name.removesuffix(".raw.txt") for raw in raws]


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.irc", description=__doc__.splitlines()[0])
    parser.add_argument("--irc", type=Path, default=DEFAULT_IRC)
    parser.add_argument("--locomo", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--export", type=Path, help="write IRC logs as messages.jsonl into this directory")
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--split", choices=("train", "dev", "test", "channel-two"), default="dev",
                        help="which of the corpus's folders --export reads (its first --files logs)")
    args = parser.parse_args(argv)
    if args.export:
        logs, names = _logs(args.irc, [args.split], args.files)
        if not logs:
            parser.error(f"no *.raw.txt log in {args.irc / args.split} (--irc is the corpus's folder)")
        out(f"{export(logs, names, args.export)} messages -> {args.export}")
        return
    ubuntu, linux = _logs(args.irc, ["train", "dev", "test"])[0], _logs(args.irc, ["channel-two"], 1)[0]
    result: dict[str, Any] = {"irc": measure_irc(ubuntu), "irc_channel_two": measure_irc(linux),
                              "irc_structure": {"ubuntu": structure_of(ubuntu), "linux": structure_of(linux)}}
    if (args.locomo / "messages.jsonl").exists():
        result["locomo_bursts"] = measure_locomo(args.locomo)
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    out(text)


if __name__ == "__main__":
    main()
