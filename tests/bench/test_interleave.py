"""bench.interleave: two talks merged into one channel keep their own order, their questions and their evidence."""

from __future__ import annotations

import pytest

from bench.interleave import interleave


def talk(channel: str, author: str, size: int) -> list[dict]:
    return [{"channel": channel, "msg_id": f"{channel}/{i}", "author": f"{author}{i % 2}", "ts": "2023-01-01T00:00:00",
             "text": f"{channel} line {i}"} for i in range(size)]


def test_two_talks_share_a_channel_each_in_its_own_order() -> None:
    messages = talk("a", "ann", 40) + talk("b", "bob", 25) + talk("c", "cat", 5)
    queries = [{"channel": "b", "qid": "q1", "question": "?", "relevant": ["b/3"]},
               {"channel": "c", "qid": "q2", "question": "?", "relevant": ["c/1"]}]
    merged, moved = interleave(messages, queries, seed=1)
    assert sorted(m["msg_id"] for m in merged) == sorted(m["msg_id"] for m in messages)
    assert {m["channel"] for m in merged} == {"a+b", "c"}
    for name in ("a", "b"):
        ids = [m["msg_id"] for m in merged if m["msg_id"].startswith(f"{name}/")]
        assert ids == [f"{name}/{i}" for i in range(len(ids))]
    # Interleaved, not one after the other: "b" has spoken before "a" is done.
    first_a_end = max(i for i, m in enumerate(merged) if m["msg_id"].startswith("a/"))
    assert min(i for i, m in enumerate(merged) if m["msg_id"].startswith("b/")) < first_a_end - 25
    timestamps = [m["ts"] for m in merged if m["channel"] == "a+b"]
    assert timestamps == sorted(timestamps) and len(set(timestamps)) == len(timestamps)
    assert [(q["channel"], q["relevant"]) for q in moved] == [("a+b", ["b/3"]), ("c", ["c/1"])]
    assert interleave(messages, queries, seed=1) == (merged, moved)


def test_more_talks_share_a_channel_each_in_its_own_order() -> None:
    messages = talk("a", "ann", 30) + talk("b", "bob", 30) + talk("c", "cat", 30) + talk("d", "dan", 4)
    queries = [{"channel": "c", "qid": "q1", "question": "?", "relevant": ["c/7"]},
               {"channel": "d", "qid": "q2", "question": "?", "relevant": ["d/2"]}]
    merged, moved = interleave(messages, queries, seed=3, talks=3)
    assert {m["channel"] for m in merged} == {"a+b+c", "d"}
    busy = [m["msg_id"].split("/")[0] for m in merged if m["channel"] == "a+b+c"]
    for name in ("a", "b", "c"):
        ids = [m["msg_id"] for m in merged if m["msg_id"].startswith(f"{name}/")]
        assert ids == [f"{name}/{i}" for i in range(30)]
    # All three are under way within the first third of the channel.
    assert {"a", "b", "c"} <= set(busy[:30])
    assert [(q["channel"], q["relevant"]) for q in moved] == [("a+b+c", ["c/7"]), ("d", ["d/2"])]


def test_talks_below_one_are_refused() -> None:
    with pytest.raises(ValueError):
        interleave(talk("a", "ann", 3), [], talks=0)
