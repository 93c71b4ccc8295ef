"""How a channel is written, measured from its stored messages alone: turn-taking, bursts, questions, replies.

Issue 25: a context rule (a question's loan, the neighbour spread, the vector's input form) should take its strength
from what a channel's own messages show, not from the dataset it was tuned on. These are the figures such a rule can
read: each is a pure function of (author, reply_to, content, created_at, channel) records, with no labels. The one
figure that needs labels (how often an answer comes right after a question, against the base rate) is apart,
in ``answers_after_questions``, for the benchmark only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Protocol

from cogs.memory.language import questions

__all__ = ("ChannelStructure", "Said", "answers_after_questions", "by_channel", "channel_structure", "table")


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


@dataclass(frozen=True, slots=True)
class ChannelStructure:
    """One channel's (or several channels' pooled) structure.

    ``turn_taking``: share of messages (after a channel's first) whose author differs from the previous message's;
    ``own_follow`` is the rest. ``mean_burst``: messages per run of one author's consecutive messages.
    ``questions``: share of messages that ask (questions.asks). ``question_other_next``: of the questions that have
    a next message, the share whose next message is another author's. ``replies``: share of messages that are a
    Discord reply. ``reply_distance``: median number of messages between a reply and what it replies to (1: the
    next message); 0 when there are no replies.
    """

    messages: int
    authors: int
    turn_taking: float
    own_follow: float
    mean_burst: float
    questions: float
    question_other_next: float
    replies: float
    reply_distance: float


def _share(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _ordered(records: Iterable[Said]) -> list[Said]:
    return sorted(records, key=lambda record: (record.created_at, record.message_id))


def channel_structure(records: Sequence[Said]) -> ChannelStructure:
    """The structure of the messages of one channel (or of several, each read in its own order, then pooled)."""
    followers = same = runs = asking = asked_with_next = other_next = replying = 0
    distances: list[int] = []
    for channel in by_channel(records).values():
        position = {record.message_id: i for i, record in enumerate(channel)}
        runs += 1 if channel else 0
        for i, record in enumerate(channel):
            asks = questions.asks(record.content)
            asking += asks
            if record.reply_to_id is not None:
                replying += 1
                if record.reply_to_id in position:
                    distances.append(i - position[record.reply_to_id])
            if i + 1 < len(channel) and asks:
                asked_with_next += 1
                other_next += channel[i + 1].author_id != record.author_id
            if i:
                followers += 1
                if record.author_id == channel[i - 1].author_id:
                    same += 1
                else:
                    runs += 1
    distances.sort()
    return ChannelStructure(
        messages=len(records), authors=len({record.author_id for record in records}),
        turn_taking=_share(followers - same, followers), own_follow=_share(same, followers),
        mean_burst=round(len(records) / runs, 3) if runs else 0.0, questions=_share(asking, len(records)),
        question_other_next=_share(other_next, asked_with_next), replies=_share(replying, len(records)),
        reply_distance=float(distances[len(distances) // 2]) if distances else 0.0)


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
