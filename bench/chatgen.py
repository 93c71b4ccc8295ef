"""Composes hand-written chat snippets into a recall fixture: channels of interleaved topics, bursts, replies, times.

A fixture's build.py (bench/data/discord, bench/data/longchat) holds the text; this module only places it. A snippet
is one topic written as it would be said:

    #q priya: has anyone rotated the deploy password yet
    dan: not me lol
    ... 3
    #a sam ^q: monday the 14th. new one goes in the vault
    ? temporal When is the deploy password being rotated? = a

``#name`` labels a line, ``^name`` makes it a Discord reply to that labelled line, ``... N`` splits the snippet
where other topics and off-topic chatter may come in between (at least N messages of them), and ``? CATEGORY
QUESTION = label,label`` is a question asked of the bot later, with its evidence (when a line is labelled ``q``,
the query also records it as "asked", for the fixture's statistics; bench.recall does not read it). Off-topic
chatter is written with placeholder authors A, B, C, who become members picked at random. Everything is drawn from
one seeded Random, so the same text gives the same files.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

__all__ = ("Channel", "Line", "Snippet", "compose", "parse_chatter", "parse_snippet", "write")

_LINE = re.compile(r"^(?:#(?P<label>\w+)\s+)?(?P<author>[\w.]+)(?:\s+\^(?P<reply>\w+))?:\s?(?P<text>.*)$")
_QUESTION = re.compile(r"^\?\s+(?P<category>[\w-]+)\s+(?P<question>.+?)\s+=\s+(?P<labels>[\w,\s]+)$")
_GAP = re.compile(r"^\.\.\.\s*(?P<gap>\d+)?$")


@dataclass(frozen=True, slots=True)
class Line:
    author: str
    text: str
    label: str | None = None
    reply: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    category: str
    question: str
    labels: tuple[str, ...]


@dataclass(slots=True)
class Snippet:
    """A topic: its segments (said without a break) and the least number of messages before each next one."""

    segments: list[list[Line]]
    gaps: list[int]
    questions: list[Question]
    next_segment: int = 0
    ready_at: int = 0


@dataclass(slots=True)
class Channel:
    name: str
    members: list[str]
    snippets: list[Snippet]
    start: datetime
    parent: str | None = None
    chatter_rate: float = 0.45  # chance that the next thing said is off-topic chatter, when a topic could go on
    concurrent: int = 3  # topics open at once
    burst_on: float = 0.4  # chance that off-topic chatter opens with the author who spoke last
    break_rate: float = 0.03  # chance, before each thing said, that the channel was quiet for hours
    emitted: list[dict[str, object]] = field(default_factory=list)


def parse_snippet(source: str) -> Snippet:
    segments: list[list[Line]] = [[]]
    gaps: list[int] = []
    found: list[Question] = []
    for raw in source.strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        if gap := _GAP.match(line):
            segments.append([])
            gaps.append(int(gap.group("gap") or 0))
        elif question := _QUESTION.match(line):
            found.append(Question(question.group("category"), question.group("question"),
                                  tuple(label.strip() for label in question.group("labels").split(","))))
        elif said := _LINE.match(line):
            segments[-1].append(Line(said.group("author"), said.group("text"), said.group("label"),
                                     said.group("reply")))
        else:
            raise ValueError(f"cannot read snippet line {raw!r}")
    return Snippet(segments, gaps, found)


def parse_chatter(source: str) -> list[list[Line]]:
    """Off-topic exchanges, separated by blank lines, with placeholder authors A, B, C."""
    return [[Line(*line.split(": ", 1)) for line in block.strip().splitlines()]
            for block in source.strip().split("\n\n")]


def _pause(rng: random.Random, same_author: bool) -> timedelta:
    # One author's burst comes seconds apart; a turn to someone else takes longer, now and then much longer.
    if same_author:
        return timedelta(seconds=rng.randint(3, 25))
    seconds = rng.choice((rng.randint(10, 90), rng.randint(30, 300), rng.randint(60, 900)))
    return timedelta(seconds=seconds)


def compose(channel: Channel, chatter: list[list[Line]], rng: random.Random, queries: list[dict[str, object]],
            chatter_after: int = 0) -> None:
    """Place ``channel``'s snippets and ``chatter`` (each exchange used in turn, from a shuffled cycle) into its
    messages, and append its questions to ``queries``. ``chatter_after``: chatter lines to add once topics are done."""
    pending = list(channel.snippets)
    rng.shuffle(pending)
    active: list[Snippet] = []
    cycle: list[list[Line]] = []
    clock = channel.start
    ids: dict[tuple[int, str], str] = {}

    def say(line: Line, author: str, reply_to: str | None) -> str:
        nonlocal clock
        previous = channel.emitted[-1]["author"] if channel.emitted else None
        clock += _pause(rng, previous == author)
        msg_id = f"{channel.name}/{len(channel.emitted) + 1}"
        row: dict[str, object] = {"channel": channel.name, "msg_id": msg_id, "author": author,
                                  "ts": clock.isoformat(timespec="seconds"), "text": line.text}
        if channel.parent is not None:
            row["parent"] = channel.parent
        if reply_to is not None:
            row["reply_to"] = reply_to
        channel.emitted.append(row)
        return msg_id

    def chat() -> None:
        if not cycle:
            cycle.extend(chatter)
            rng.shuffle(cycle)
        cast = rng.sample(channel.members, 3)
        last = channel.emitted[-1]["author"] if channel.emitted else None
        if last in channel.members and rng.random() < channel.burst_on:  # the one who just spoke goes on, off topic
            cast = [last, *(member for member in cast if member != last)][:3]
        for line in cycle.pop():
            say(line, cast["ABC".index(line.author)], None)

    while pending or active:
        if rng.random() < channel.break_rate:  # the channel goes quiet for hours (night, work)
            clock += timedelta(hours=rng.randint(2, 14))
        while len(active) < channel.concurrent and pending:
            snippet = pending.pop()
            snippet.ready_at = len(channel.emitted) + rng.randint(0, 6)
            active.append(snippet)
        ready = [snippet for snippet in active if snippet.ready_at <= len(channel.emitted)]
        if not ready or rng.random() < channel.chatter_rate:
            chat()
            continue
        snippet = rng.choice(ready)
        key = id(snippet)
        for line in snippet.segments[snippet.next_segment]:
            msg_id = say(line, line.author, None if line.reply is None else ids[key, line.reply])
            if line.label is not None:
                ids[key, line.label] = msg_id
        snippet.next_segment += 1
        if snippet.next_segment == len(snippet.segments):
            active.remove(snippet)
            for question in snippet.questions:
                query = {"channel": channel.name, "qid": f"{channel.name}/q{len(queries) + 1}",
                         "question": question.question, "category": question.category,
                         "relevant": [ids[key, label] for label in question.labels]}
                if (key, "q") in ids:  # the message that asked, for the fixture's own statistics
                    query["asked"] = ids[key, "q"]
                queries.append(query)
        else:
            snippet.ready_at = len(channel.emitted) + snippet.gaps[snippet.next_segment - 1] + rng.randint(0, 2)
    target = len(channel.emitted) + chatter_after
    while len(channel.emitted) < target:
        chat()


def write(directory: Path, channels: list[Channel], queries: list[dict[str, object]]) -> None:
    """messages.jsonl (each channel's messages, all in time order) and queries.jsonl, in ``directory``."""
    rows = sorted((row for channel in channels for row in channel.emitted), key=lambda row: (row["ts"], row["msg_id"]))
    with (directory / "messages.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    with (directory / "queries.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(query, ensure_ascii=False) + "\n" for query in queries)
