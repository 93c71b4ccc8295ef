"""How a channel is written, measured from its stored messages alone: turn-taking, bursts, questions, replies.

Issue 25: a context rule (a question's loan, the neighbour spread) takes its strength from what a channel's own
messages show, not from the dataset it was tuned on. The figures are the core's (cogs/memory/search/structure.py,
which the first stage reads each channel by), here over a dataset's records: a pure function of (author, reply_to,
content, created_at, channel), with no labels. The one figure that needs labels (how often an answer comes right
after a question, against the base rate) is apart, in ``answers_after_questions``, for the benchmark only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from datetime import datetime
from typing import Protocol

from cogs.memory.language import questions
from cogs.memory.search.structure import ChannelStructure, Posted, measure

__all__ = ("ChannelStructure", "Said", "answers_after_questions", "by_channel", "channel_structure", "posted", "table")


class Said(Protocol):
    """What the statistics read of a stored message (MessageRecord has these fields)."""

    @property
    def message_id(self) -> int: ...
    @property
    def channel_id(self) -> int: ...
    @property
    def author_id(self) -> int: ...
    @property
    def reply_to_id(self) -> int | None: ...
    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


def posted(channel: Sequence[Said]) -> list[Posted]:
    """A channel's records as the structure reads them (search/structure.py)."""
    return [Posted(record.message_id, record.author_id, record.reply_to_id, questions.asks(record.content))
            for record in channel]


def channel_structure(records: Sequence[Said]) -> ChannelStructure:
    """The structure of the messages of one channel (or of several, each read in its own order, then pooled): the
    core's measurement (search/structure.measure), which the first stage reads each channel's rules by."""
    return measure(posted(channel) for channel in by_channel(records).values())


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _ordered(records: Iterable[Said]) -> list[Said]:
    return sorted(records, key=lambda record: (record.created_at, record.message_id))


def by_channel(records: Iterable[Said]) -> dict[Hashable, list[Said]]:
    """The records of each channel, in the order they were written."""
    channels: dict[Hashable, list[Said]] = defaultdict(list)
    for record in _ordered(records):
        channels[record.channel_id].append(record)
    return dict(channels)


def answers_after_questions(records: Sequence[Said], evidence: Collection[int]) -> tuple[float, float]:
    """(share of the ``evidence`` messages whose previous message in the channel asks, share of all messages whose
    previous message asks): how much more often than chance an answer comes right after a question. Needs labels."""
    after_question = evidence_after = with_previous = evidence_with_previous = 0
    for channel in by_channel(records).values():
        for previous, record in zip(channel, channel[1:]):
            asks = questions.asks(previous.content)
            with_previous += 1
            after_question += asks
            if record.message_id in evidence:
                evidence_with_previous += 1
                evidence_after += asks
    return _share(evidence_after, evidence_with_previous), _share(after_question, with_previous)


def table(name: str, records: Sequence[Said], channels: Mapping[int, str], evidence: Collection[int],
          questions_asked: int) -> str:
    """Each channel's structure (``channels``: each id's name) and all channels pooled, then the labelled
    answer-after-question rate, as Markdown."""
    head = ["dataset", "channel", *(field.name for field in fields(ChannelStructure))]
    lines = [_row(head), _row(["---"] * len(head))]
    for channel_id, channel in sorted(by_channel(records).items()):
        lines.append(_row([name, channels[channel_id], *map(str, asdict(channel_structure(channel)).values())]))
    lines.append(_row([name, "all", *map(str, asdict(channel_structure(records)).values())]))
    after, base = answers_after_questions(records, evidence)
    lines.append(f"\n{name}: {after:.2f} of answer-bearing messages come right after a question "
                 f"(base rate {base:.2f}); {len(evidence)} evidence messages, {questions_asked} questions")
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
