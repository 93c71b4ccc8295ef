"""bench.recall end to end on a tiny messages/queries pair: the real ingest path, the JSON contract."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from bench import ingesting, recall

MESSAGES = [
    {"channel": "c1", "msg_id": "c1/1", "author": "Ann", "ts": "2024-01-01T10:00:00", "text": "I adopted a grey cat"},
    {"channel": "c1", "msg_id": "c1/2", "author": "Ben", "ts": "2024-01-01T10:00:30", "text": "Nice! What's its name?"},
    {"channel": "c1", "msg_id": "c1/3", "author": "Ann", "ts": "2024-01-01T10:01:00", "text": "Her name is Pixel"},
    {"channel": "c2", "msg_id": "c2/1", "author": "Ann", "ts": "2024-01-02T09:00:00", "text": "My cat is called Tom"},
    {"channel": "c2", "msg_id": "c2/2", "author": "Cal", "ts": "2024-01-02T09:00:30", "text": "Going hiking on Sunday"},
]
QUERIES = [
    {"channel": "c1", "qid": "q1", "question": "What is the name of Ann's cat?", "category": 1,
     "relevant": ["c1/3"]},
    {"channel": "c2", "qid": "q2", "question": "When is Cal going hiking?", "category": 2, "relevant": ["c2/2"]},
    {"channel": "c2", "qid": "q3", "question": "Unanswerable", "category": 2, "relevant": ["missing/1"]},
]
FIELDS = {"mode", "n_queries", "recall@5", "recall@10", "recall@20", "recall@50", "mrr@10", "per_category",
          "ingest_msgs_per_s", "embed_only_msgs_per_s", "search_p50_ms", "search_p95_ms"}


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_recall_bench_writes_the_contract_json(tmp_path: Path) -> None:
    out = tmp_path / "out" / "recall.json"
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                 "--mode", "hybrid", "--candidates", "10", "--db", str(tmp_path), "--json", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert FIELDS <= result.keys()
    # q3's only relevant id is not in the messages, so it is not scored; each channel has fewer than 5 messages.
    assert (result["mode"], result["n_queries"], result["recall@5"]) == ("hybrid", 2, 1.0)
    assert set(result["per_category"]) == {"1", "2"}


def test_ingest_progress_goes_to_stderr_as_plain_lines(tmp_path: Path, capsys) -> None:
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                 "--mode", "hybrid", "--candidates", "10", "--db", str(tmp_path), "--json", str(tmp_path / "r.json")])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("ingest 5 messages: ")]
    assert (lines[-1].startswith("ingest 5 messages: 5/5 (100%), "), "ingest 5 messages" in captured.out) == (True, False)


def test_with_a_database_url_it_runs_both_stores_side_by_side(tmp_path: Path, postgres_server_url: str) -> None:
    out = tmp_path / "both.json"
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                 "--mode", "hybrid", "--candidates", "10", "--db", str(tmp_path), "--json", str(out),
                 "--database-url", postgres_server_url])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert FIELDS <= result["sqlite"].keys() and FIELDS <= result["postgresql"].keys()
    assert (result["postgresql"]["n_messages"], result["postgresql"]["recall@5"]) == (5, 1.0)
    # Each channel has fewer than 5 messages, so both stores find every relevant one at every k.
    deltas = result["postgresql_minus_sqlite"]["hybrid"]
    assert set(deltas) == {"recall@5", "recall@10", "recall@20", "recall@50", "mrr@10"}
    assert [deltas[f"recall@{k}"] for k in (5, 10, 20, 50)] == [0.0, 0.0, 0.0, 0.0]


async def test_the_scratch_database_is_dropped_afterwards(postgres_server_url: str) -> None:
    import asyncpg

    from bench.pg import scratch_database

    async with scratch_database(postgres_server_url, "smoke") as url:
        name = url.split("?")[0].rsplit("/", 1)[1]
    conn = await asyncpg.connect(postgres_server_url)
    try:
        left = await conn.fetchval("SELECT COUNT(*) FROM pg_database WHERE datname = $1", name)
    finally:
        await conn.close()
    assert (name.startswith("bench_smoke_"), left) == (True, 0)
def test_queries_with_a_language_get_per_language_figures(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_jsonl(data / "messages.jsonl", MESSAGES)
    write_jsonl(data / "queries.jsonl", [dict(query, lang=lang) for query, lang in zip(QUERIES, ["en", "zh", "zh"])])
    out = tmp_path / "recall.json"
    recall.main(["--data", str(data), "--mode", "keyword", "--candidates", "10", "--db", str(tmp_path),
                 "--json", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert {lang: figures["n_queries"] for lang, figures in result["per_language"].items()} == {"en": 1, "zh": 1}


def test_queries_without_a_language_get_no_per_language_figures(tmp_path: Path) -> None:
    out = tmp_path / "recall.json"
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                 "--mode", "keyword", "--candidates", "10", "--db", str(tmp_path), "--json", str(out)])
    assert "per_language" not in json.loads(out.read_text(encoding="utf-8"))


def test_the_message_alone_baseline_answers_beside_memory_search(tmp_path: Path) -> None:
    out = tmp_path / "recall.json"
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                 "--mode", "vector,alone", "--candidates", "10", "--db", str(tmp_path), "--json", str(out)])
    vector, alone = json.loads(out.read_text(encoding="utf-8"))
    assert FIELDS <= alone.keys()
    # Each channel has fewer than 5 messages, so the baseline too finds every relevant one in its top 5.
    assert (vector["mode"], alone["mode"], alone["n_queries"], alone["recall@5"]) == ("vector", "alone", 2, 1.0)


def test_a_message_may_name_the_earlier_one_it_replies_to(tmp_path: Path) -> None:
    messages = [dict(MESSAGES[0]), dict(MESSAGES[1], reply_to="c1/1"), dict(MESSAGES[2], reply_to="c1/9")]
    records, _ = recall.load_dataset(write_jsonl(tmp_path / "m.jsonl", messages),
                                     write_jsonl(tmp_path / "q.jsonl", QUERIES))
    # c1/9 is no message of the file: no reply.
    assert [record.reply_to_id for record in records] == [None, records[0].message_id, None]


def test_ingest_progress_counts_messages_stored_not_handed_to_the_queue(tmp_path: Path, monkeypatch) -> None:
    shown: list[tuple[int, int]] = []

    class StoredCheck:
        """The bench's progress, checking each count it is shown against the rows its database holds."""

        def __init__(self, label: str, total: int, out: object, **_: object) -> None:
            pass

        def update(self, done: int, note: str = "") -> None:
            [db_path] = tmp_path.glob("*/memory.sqlite3")  # the bench's scratch folder under --db
            with contextlib.closing(sqlite3.connect(db_path)) as database:
                shown.append((done, database.execute("SELECT count(*) FROM messages").fetchone()[0]))

        def close(self) -> None:
            pass

    monkeypatch.setattr(ingesting, "TerminalProgress", StoredCheck)
    recall.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                 "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                 "--mode", "hybrid", "--candidates", "10", "--db", str(tmp_path), "--json", str(tmp_path / "r.json")])
    assert shown and shown[-1] == (5, 5)
    assert all(done <= stored for done, stored in shown), shown


def test_a_query_may_name_members_and_channels_by_name_and_say_when_and_where_it_was_asked(tmp_path: Path) -> None:
    query = {"channel": "c1", "qid": "q9", "question": "what did <@Ann> say in <#c2>, or <@nobody>?",
             "relevant": ["c1/3"], "asked_at": "2024-01-03T08:00:00", "guild_wide": True}
    records, [loaded] = recall.load_dataset(write_jsonl(tmp_path / "m.jsonl", MESSAGES),
                                            write_jsonl(tmp_path / "q.jsonl", [query]))
    ann, c2 = records[0].author_id, records[3].channel_id
    assert loaded.question == f"what did <@{ann}> say in <#{c2}>, or <@nobody>?"
    assert (loaded.asked_at, loaded.guild_wide) == (datetime(2024, 1, 3, 8, 0, tzinfo=UTC), True)
    _, [plain] = recall.load_dataset(tmp_path / "m.jsonl", write_jsonl(tmp_path / "p.jsonl", QUERIES[:1]))
    assert (plain.asked_at, plain.guild_wide) == (None, False)
