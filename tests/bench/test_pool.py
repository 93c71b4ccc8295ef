"""bench.pool end to end on a tiny messages/queries pair: a question's Discord reply enters the widened pool, and the
JSON holds each depth's first-stage and widened pool recall."""

from __future__ import annotations

import json
from pathlib import Path

from bench import pool

MESSAGES = [
    {"channel": "c1", "msg_id": "c1/1", "author": "Ann", "ts": "2024-01-01T10:00:00",
     "text": "what is the wifi password for the cabin?"},
    {"channel": "c1", "msg_id": "c1/2", "author": "Cal", "ts": "2024-01-01T10:00:20", "text": "the match starts at 9"},
    {"channel": "c1", "msg_id": "c1/3", "author": "Dee", "ts": "2024-01-01T10:00:40", "text": "I'm bringing snacks"},
    {"channel": "c1", "msg_id": "c1/4", "author": "Cal", "ts": "2024-01-01T10:01:00", "text": "who has the remote"},
    {"channel": "c1", "msg_id": "c1/5", "author": "Ben", "ts": "2024-01-01T10:01:30", "text": "hunter2, all lowercase",
     "reply_to": "c1/1"},
]
QUERIES = [{"channel": "c1", "qid": "q1", "question": "wifi password for the cabin", "category": 1,
            "relevant": ["c1/5"]}]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_pool_bench_measures_each_depth_first_stage_and_widened(tmp_path: Path) -> None:
    out = tmp_path / "pool.json"
    pool.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
               "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
               "--depth", "2,5", "--candidates", "10", "--db", str(tmp_path), "--json", str(out),
               # The question above its reply (no reply_lift), so that the reply comes through the pool.
               "--loans-off", "reply_lift"])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["n_queries"] == 1
    # With the lift the reply ranks first (above its question) and the first stage holds it at depth 2.
    assert result["full"]["depths"]["2"]["first_stage"] == 1.0
    depths = result["without reply_lift"]["depths"]
    assert set(depths) == {"2", "5"}
    assert set(depths["2"]["rules"]) == {"default", *(pool.rule_name(*rule) for rule in pool.RULES)}
    # All five messages fit a pool of 5: the reply is in it either way.
    assert depths["5"]["first_stage"] == 1.0 == depths["5"]["rules"]["1x1"]["pool_recall"]
    # The question ranks first; its Discord reply comes in right after it.
    widened = depths["2"]["rules"]["1x1"]
    assert (widened["pool_recall"], widened["brought"], widened["relevant"]) == (1.0, {"reply": 1}, {"reply": 1})
    assert widened["gain"] == round(1.0 - depths["2"]["first_stage"], 4)
