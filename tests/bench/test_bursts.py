"""bench.bursts: a message of several sentences becomes a burst of one-sentence messages; its evidence follows."""

from __future__ import annotations

from bench.bursts import split_into_bursts


def test_each_sentence_becomes_a_message_of_the_same_author_in_order() -> None:
    messages = [{"channel": "c", "msg_id": "c/1", "author": "ann", "ts": "2023-05-08T13:56:00",
                 "text": "Hey Mel! Good to see you. How have you been?"},
                {"channel": "c", "msg_id": "c/2", "author": "mel", "ts": "2023-05-08T13:57:00",
                 "text": "Swamped with work, e.g. the kids' school run."}]
    queries = [{"channel": "c", "qid": "q", "question": "?", "relevant": ["c/1", "c/2"]}]
    split, moved = split_into_bursts(messages, queries)
    assert [(m["msg_id"], m["author"], m["text"]) for m in split] == [
        ("c/1", "ann", "Hey Mel!"), ("c/1#1", "ann", "Good to see you."), ("c/1#2", "ann", "How have you been?"),
        ("c/2", "mel", "Swamped with work, e.g. the kids' school run.")]
    assert [m["ts"] for m in split[:3]] == ["2023-05-08T13:56:00", "2023-05-08T13:56:02", "2023-05-08T13:56:04"]
    assert moved[0]["relevant"] == ["c/1", "c/1#1", "c/1#2", "c/2"]
