"""bench.structure: a channel's turn-taking, bursts, questions and replies, read from its messages alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bench.structure import answers_after_questions, by_channel, channel_structure
from cogs.memory.records import MessageRecord

T0 = datetime(2024, 5, 1, 18, 0, tzinfo=UTC)
ANN, BEN, CAL = 1, 2, 3
# (message_id, minute, channel, author, content, reply_to): channel 10 in time order, one line of channel 20 between.
MESSAGES = [
    (1, 0, 10, ANN, "where should we eat?", None),
    (2, 1, 10, ANN, "somewhere cheap", None),
    (3, 2, 10, BEN, "tacos", 1),
    (9, 3, 20, BEN, "unrelated, other channel", None),
    (4, 4, 10, CAL, "ok what time?", None),
    (5, 5, 10, ANN, "7", None),
    (6, 6, 10, ANN, "at Rosa's", None),
]


def records() -> list[MessageRecord]:
    return [MessageRecord(message_id=message_id, guild_id=1, channel_id=channel, parent_channel_id=None,
                          author_id=author, author_name=str(author), content=content,
                          created_at=T0 + timedelta(minutes=minute), reply_to_id=reply_to)
            for message_id, minute, channel, author, content, reply_to in MESSAGES]


def test_one_channel_s_structure() -> None:
    channel = by_channel(records())[10]
    figures = channel_structure(channel)
    # Followers: ann->ann, ann->ben, ben->cal, cal->ann, ann->ann; runs: ann, ben, cal, ann.
    assert (figures.messages, figures.authors) == (6, 3)
    assert (figures.turn_taking, figures.own_follow, figures.mean_burst) == (0.6, 0.4, 1.5)
    # Two ask; ann's question is followed by ann herself, cal's by ann.
    assert (figures.questions, figures.question_other_next) == (pytest.approx(0.3333), 0.5)
    assert (figures.replies, figures.reply_distance) == (pytest.approx(0.1667), 2.0)


def test_channels_are_read_each_in_its_own_order_then_pooled() -> None:
    pooled = channel_structure(records())
    # Channel 20's lone message neither follows nor breaks channel 10's runs: one more run, no more followers.
    assert (pooled.messages, pooled.turn_taking, pooled.mean_burst) == (7, 0.6, 1.4)


def test_the_answer_after_a_question_rate_against_its_base_rate() -> None:
    # Evidence 3 follows a remark, 5 follows a question; of the 5 messages with a previous one, 2 follow a question.
    assert answers_after_questions(records(), {3, 5}) == (0.5, 0.4)
