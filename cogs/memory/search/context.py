"""Context: the window of rows around each source in its channel (its previous message, the messages after it,
its Discord replies), who neighbours whom in it and what may answer a question, and each lender's channel.

A store reads the window (store/neighbours.py); loans.py lends along it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from ..language import questions
from ..runtime.ranking import RankingTuning
from ..store.rows import CandidateRow
from .structure import Exchanges

__all__ = ("ChannelWindow", "Neighbour", "Neighbours", "Window", "addressed", "lenders", "neighbours_in",
           "replied_authors", "rows_wanted", "window_of")

DEFAULT_TUNING = RankingTuning()
# What a guessed answer keeps of a question's loan where its author and the asker were just talking (``addressed``).
CONVERSING = 1.0


class ChannelWindow(NamedTuple):
    """A source's surroundings in its channel, as a store reads them: its previous message, the messages after it
    (nearest first, ``reply_window + 1`` at most) and its Discord replies (earliest first, ``reply_window`` at most),
    each as a row id."""

    previous: int | None
    after: tuple[int, ...]
    replies: tuple[int, ...]


class Neighbour(NamedTuple):
    """A source's previous and next message, what may answer it, and what may answer its next message, were they
    questions (questions.answers; for the source, its replies too)."""

    previous: int | None
    following: int | None
    answers: tuple[int, ...]
    following_answers: tuple[int, ...]


Window = dict[int, ChannelWindow]
Neighbours = dict[int, Neighbour]


def window_of(rows: Iterable[Sequence[Any]], reply_window: int = DEFAULT_TUNING.reply_window) -> Window:
    """A store's neighbour rows (store/neighbours.py) as a Window: the messages after a source stop where its
    channel does, its replies where they do."""
    replies_at = 2 + reply_window + 1  # a row: the source, its previous, reply_window + 1 after it, its replies

    def present(ids: Sequence[Any]) -> tuple[int, ...]:
        return tuple(rowid for rowid in ids if rowid is not None)

    return {row[0]: ChannelWindow(row[1], present(row[2:replies_at]), present(row[replies_at:])) for row in rows}


def rows_wanted(candidates: list[int], window: Window) -> list[int]:
    """The row ids to read for a search: its candidates and every message in their sources' window, in order."""
    wanted = set(candidates)
    for previous, after, replies in window.values():
        wanted.update(after, replies)
        if previous is not None:
            wanted.add(previous)
    return sorted(wanted)


def neighbours_in(window: Window, rows: dict[int, CandidateRow], reply_window: int = DEFAULT_TUNING.reply_window,
                  replies_lent: int = DEFAULT_TUNING.replies_lent) -> Neighbours:
    """Each source's previous and next message from ``window``, and what may answer it and its next message, were
    they questions: among the next ``reply_window`` messages that pass (``rows``), by questions.answers (the one asked
    is whom the question replies to on Discord, where that message passes, else the author of the message it follows:
    on annotated IRC the one a question names answers next 78% of the time, docs/loans.md), and for the source, its
    first ``replies_lent`` replies (Discord's reply) that pass too."""

    def author(rowid: int | None) -> Any:
        return rows[rowid].author_id if rowid in rows else None

    replies_to = replied_authors(rows)

    def answers(question: int, follows: int | None, after: tuple[int, ...]) -> tuple[int, ...]:
        # The one asked: whom the question replies to on Discord, else the author of the message it follows.
        asked = replies_to.get(question)
        passing = [(rowid, author(rowid)) for rowid in after[:reply_window] if rowid in rows]
        return questions.answers(author(question), author(follows) if asked is None else asked, passing)

    neighbours: Neighbours = {}
    for rowid, (previous, after, replies) in window.items():
        following = after[0] if after else None
        guessed = answers(rowid, previous, after)
        replied = tuple(reply for reply in replies[:replies_lent] if reply in rows and reply not in guessed)
        neighbours[rowid] = Neighbour(previous, following, guessed + replied,
                                      () if following is None else answers(following, rowid, after[1:]))
    return neighbours


def lenders(neighbours: Neighbours, rows: Mapping[int, CandidateRow]) -> dict[int, int]:
    """The channel id of each message that may lend (a source, and a source's next message), read from its own row
    or, for one the filters left out, from a neighbour's (a source's window stays in its channel)."""
    channels: dict[int, int] = {}
    for rowid, (previous, following, answers, _) in neighbours.items():
        near = next((rows[other] for other in (rowid, following, previous, *answers)
                     if other is not None and other in rows), None)
        if near is not None:
            channels[rowid] = near.channel_id
            if following is not None:
                channels[following] = near.channel_id
    return channels


def replied_authors(rows: Mapping[int, CandidateRow]) -> dict[int, int]:
    """The author each of ``rows`` replies to on Discord, by row id, where the message it replies to is among
    ``rows``."""
    authors = {row.message_id: row.author_id for row in rows.values()}
    return {rowid: authors[row.reply_to_id] for rowid, row in rows.items()
            if row.reply_to_id is not None and row.reply_to_id in authors}


def addressed(neighbours: Neighbours, rows: Mapping[int, CandidateRow],
              talking: Mapping[int, Exchanges] | None = None) -> dict[tuple[int, int], float]:
    """What a question's loan to a guessed answer keeps where Discord replies say whom the two address, by (question,
    answer) row ids: the order of messages guesses, a reply names.

    Where the answer replies to someone, whom decides: all of it (1.0) for a message of the asker's, nothing (0.0)
    for someone else's, unless the question replies to a third member (the answer is a side exchange with the asker
    while the question waits on someone else: left to the structure); where only the question replies to someone,
    all of it for an answer by them, nothing for one by someone else. Measured on annotated IRC (docs/loans.md,
    "Whom a reply addresses"): a guessed answer that names the asker answers 74% of the time (91% when the question
    names its author, 74% when it names no one, 25% when it names a third), one that names another 0.8%; one that
    names no one 78% when the question names its author, 1.9% when it names someone else, 14% when neither names
    anyone. Where neither replies to anyone, the pair keeps ``CONVERSING`` when the two replied to each other in the
    ``structure.EXCHANGE_WINDOW`` messages before the question (``talking``: each channel's Exchanges, by channel
    id; 55% on IRC, 11% for the rest), unless the question is put to everyone (questions.to_everyone: 25%). A pair
    nothing speaks for (or whose replied message is not among ``rows``) is left out: the channel's structure decides
    it.
    """
    exchanged = talking or {}
    replied = replied_authors(rows)
    kept: dict[tuple[int, int], float] = {}
    for rowid, (_, following, answers, following_answers) in neighbours.items():
        for question, guessed in ((rowid, answers), (following, following_answers)):
            if question is None or question not in rows:
                continue
            asker, asked = rows[question].author_id, replied.get(question)
            for answer in guessed:
                if answer not in rows:
                    continue
                names, answerer = replied.get(answer), rows[answer].author_id
                if names is not None:  # whom the answer replies to decides before whom the question did
                    if names != asker:
                        kept[question, answer] = 0.0
                    elif asked is None or asked in (asker, answerer):
                        kept[question, answer] = 1.0
                    # else the question was put to someone else: a side exchange with the asker, left to the structure
                elif asked is not None and asked != asker:
                    kept[question, answer] = 1.0 if asked == answerer else 0.0
                elif (channel := exchanged.get(rows[question].channel_id)) is not None and channel.talking(
                        rows[question].message_id, asker, answerer) and not questions.to_everyone(
                        rows[question].content):
                    kept[question, answer] = CONVERSING
    return kept
