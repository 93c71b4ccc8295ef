"""Context (search/context.py): who neighbours whom in a source's window, and what may answer a question."""

from __future__ import annotations

import dataclasses

from cogs.memory.records import MessageRecord
from cogs.memory.search.context import ChannelWindow, neighbours_in, rows_wanted
from tests.fixtures.core import T0

GUILD, GENERAL = 1, 10


def test_neighbours_name_what_may_answer_by_whom_a_question_asks() -> None:
    # Rows 1..5 in a channel: jo, sam, kat, jo, sam (a row is message_id, guild, channel, author_id, ...).
    rows = {rowid: MessageRecord(rowid, GUILD, GENERAL, None, author, "", "", T0) for rowid, author in
            [(1, "jo"), (2, "sam"), (3, "kat"), (4, "jo"), (5, "sam")]}
    window = {1: ChannelWindow(None, (2, 3, 4, 5), ()), 2: ChannelWindow(1, (3, 4, 5), ())}
    neighbours = neighbours_in(window, rows)
    # 1 opens the channel: only its next message. Its next (2, sam) follows jo: kat's 3, then jo's 4.
    assert neighbours[1] == (None, 2, (2,), (3, 4))
    assert neighbours[2] == (1, 3, (3, 4), (4, 5))
    # A message the filters hide (not among rows) is passed over.
    del rows[4]
    assert neighbours_in({2: ChannelWindow(1, (3, 4, 5), ())}, rows)[2] == (1, 3, (3,), (5,))


def test_the_replies_to_a_message_may_answer_it_however_far_below() -> None:
    # 1 asks; 2 is next; 9 and 12 reply to 1 through Discord's reply, far below, and so does 2 (once in the answers).
    rows = {rowid: MessageRecord(rowid, GUILD, GENERAL, None, author, "", "", T0) for rowid, author in
            [(1, "jo"), (2, "sam"), (3, "kat"), (9, "ravi"), (12, "sam")]}
    assert neighbours_in({1: ChannelWindow(None, (2, 3), (2, 9, 12))}, rows)[1] == (None, 2, (2, 9, 12), (3,))
    # A reply the filters hide is passed over.
    del rows[9]
    assert neighbours_in({1: ChannelWindow(None, (2, 3), (2, 9, 12))}, rows)[1] == (None, 2, (2, 12), (3,))


def test_the_rows_wanted_are_the_candidates_and_every_message_in_their_windows_once_in_order() -> None:
    # 1 opens its channel (no previous message); 5's previous is a candidate too.
    window = {1: ChannelWindow(None, (2, 3), (9,)), 5: ChannelWindow(4, (6,), (2,))}
    assert rows_wanted([5, 1, 7], window) == [1, 2, 3, 4, 5, 6, 7, 9]


def test_the_one_a_question_replies_to_is_the_one_asked() -> None:
    # jo's 1; sam's 2; kat asks jo through Discord's reply (3 replies to 1); sam's 4 comes between; jo answers in 5.
    rows = {rowid: MessageRecord(rowid, GUILD, GENERAL, None, author, "", "", T0) for rowid, author in
            [(1, "jo"), (2, "sam"), (3, "kat"), (4, "sam"), (5, "jo")]}
    rows[3] = dataclasses.replace(rows[3], reply_to_id=1)
    # The next other author's message, and jo's first: the question was put to jo, not to sam, whom it follows.
    assert neighbours_in({3: ChannelWindow(2, (4, 5), ())}, rows)[3] == (2, 4, (4, 5), (5,))
    # Without the reply the one asked is sam, whose 4 is the next message: the guess is 4 alone.
    rows[3] = dataclasses.replace(rows[3], reply_to_id=None)
    assert neighbours_in({3: ChannelWindow(2, (4, 5), ())}, rows)[3] == (2, 4, (4,), (5,))
