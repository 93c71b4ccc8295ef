"""bench.scale prints the JSON contract other tools read (tiny sizes, random and realistic stand-in vectors)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from bench import ingesting, scale

CONTRACT_KEYS = {"messages", "vectors", "ingest_msgs_per_s", "search_p50_ms", "search_p95_ms", "query_embed_p95_ms",
                 "vector_p95_ms", "keyword_p95_ms", "bruteforce_p95_ms", "peak_rss_mb", "bytes_per_vector",
                 "index_build_s", "index_load_verify_s", "index_kind"}


@pytest.mark.skipif(not (scale.DATA / "messages.jsonl").exists(), reason="needs ../shared/data/locomo")
async def test_one_size_reports_every_contract_field(tmp_path: Path) -> None:
    args = scale.parse_args(["--sizes", "1200", "--model-max", "0", "--vectors", "random", "--queries", "3",
                             "--workdir", str(tmp_path)])
    run = await scale.run_size(1200, args)
    assert CONTRACT_KEYS | {"index_recall_at_10_random"} <= run.keys()
    assert (run["messages"], run["vectors"], run["index_kind"]) == (1200, "random", "flat")
    assert json.loads(json.dumps(run)) == run


def write_tiny_dataset(directory: Path) -> Path:
    texts = ["the picnic moved to Saturday", "bring blankets", "who has the grill?", "rain is forecast"]
    (directory / "messages.jsonl").write_text("".join(json.dumps({"author": f"user{i % 3}", "text": text}) + "\n"
                                                      for i, text in enumerate(texts * 5)), encoding="utf-8")
    questions = ["when is the picnic", "what should I bring", "who brings the grill", "will it rain"]
    (directory / "queries.jsonl").write_text("".join(json.dumps({"question": q}) + "\n" for q in questions),
                                             encoding="utf-8")
    return directory


async def test_realistic_vectors_come_from_each_messages_real_vector(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path)
    args = scale.parse_args(["--sizes", "300", "--model-max", "0", "--queries", "3", "--data", str(data),
                             "--vector-cache", str(tmp_path / "cache"), "--workdir", str(tmp_path)])
    run = await scale.run_size(300, args)
    assert CONTRACT_KEYS | {"index_recall_at_10_realistic", "index_recall_at_10_random"} <= run.keys()
    assert (run["vectors"], run["realistic_unmatched_texts"]) == ("realistic", 0)


async def test_with_a_database_url_postgresql_is_measured_beside_sqlite(tmp_path: Path,
                                                                        postgres_server_url: str) -> None:
    data = write_tiny_dataset(tmp_path)
    args = scale.parse_args(["--sizes", "300", "--model-max", "0", "--queries", "3", "--workdir", str(tmp_path),
                             "--data", str(data), "--vector-cache", str(tmp_path / "cache"),
                             "--database-url", postgres_server_url])
    run = await scale.run_size(300, args)
    assert CONTRACT_KEYS <= run.keys()
    assert set(run["postgresql"]) == {"ingest_msgs_per_s", "search_p50_ms", "search_p95_ms", "keyword_p95_ms",
                                      "vector_p95_ms"}
    assert all(value > 0 for value in run["postgresql"].values())


async def test_a_size_above_random_max_skips_the_worst_case_build_and_says_so(tmp_path: Path) -> None:
    data = write_tiny_dataset(tmp_path)
    args = scale.parse_args(["--sizes", "300", "--model-max", "0", "--queries", "3", "--data", str(data),
                             "--vector-cache", str(tmp_path / "cache"), "--workdir", str(tmp_path),
                             "--random-max", "299"])
    run = await scale.run_size(300, args)
    assert (run["index_recall_at_10_random"], run["random_skipped"]) == (None, "above --random-max 299")
    assert "index_build_random_s" not in run


class StoredCheck:
    """Stands in for the bench's progress: checks each count it is shown against the rows the database holds."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.shown: list[tuple[int, int]] = []

    def __call__(self, label: str, total: int, out: object, **_: object) -> "StoredCheck":
        return self

    def update(self, done: int, note: str = "") -> None:
        with contextlib.closing(sqlite3.connect(self.db_path)) as database:
            stored = database.execute("SELECT count(*) FROM messages").fetchone()[0]
        self.shown.append((done, stored))

    def close(self) -> None:
        pass


async def test_ingest_progress_counts_messages_stored_not_handed_to_the_queue(
        monkeypatch: pytest.MonkeyPatch, store, embedder, indexes, db_path: Path, make_record) -> None:
    progress = StoredCheck(db_path)
    monkeypatch.setattr(ingesting, "TerminalProgress", progress)
    records = [make_record(i, f"message number {i} about the picnic") for i in range(1, 401)]
    args = scale.parse_args(["--batch-size", "16"])
    await scale.ingest_all(store, embedder, indexes, records, None, args, None)
    assert progress.shown and progress.shown[-1] == (400, 400)
    assert all(done <= stored for done, stored in progress.shown), progress.shown[:5]
