"""bench.scale prints the JSON contract other tools read (a tiny size, random vectors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scale

CONTRACT_KEYS = {"messages", "vectors", "ingest_msgs_per_s", "search_p50_ms", "search_p95_ms", "bruteforce_p95_ms",
                 "keyword_p95_ms", "peak_rss_mb"}


@pytest.mark.skipif(not (scale.DATA / "messages.jsonl").exists(), reason="needs ../shared/data/locomo")
async def test_one_size_reports_every_contract_field(tmp_path: Path) -> None:
    args = scale.parse_args(["--sizes", "1200", "--model-max", "0", "--queries", "3", "--workdir", str(tmp_path)])
    run = await scale.run_size(1200, args)
    assert CONTRACT_KEYS <= run.keys()
    assert (run["messages"], run["vectors"]) == (1200, "random")
    assert json.loads(json.dumps(run)) == run


def write_tiny_dataset(directory: Path) -> Path:
    texts = ["the picnic moved to Saturday", "bring blankets", "who has the grill?", "rain is forecast"]
    (directory / "messages.jsonl").write_text("".join(json.dumps({"author": f"user{i % 3}", "text": text}) + "\n"
                                                      for i, text in enumerate(texts * 5)), encoding="utf-8")
    questions = ["when is the picnic", "what should I bring", "who brings the grill", "will it rain"]
    (directory / "queries.jsonl").write_text("".join(json.dumps({"question": q}) + "\n" for q in questions),
                                             encoding="utf-8")
    return directory


async def test_with_a_database_url_postgresql_is_measured_beside_sqlite(tmp_path: Path,
                                                                        postgres_server_url: str) -> None:
    data = write_tiny_dataset(tmp_path)
    args = scale.parse_args(["--sizes", "300", "--model-max", "0", "--queries", "3", "--workdir", str(tmp_path),
                             "--data", str(data), "--database-url", postgres_server_url])
    run = await scale.run_size(300, args)
    assert CONTRACT_KEYS <= run.keys()
    assert set(run["postgresql"]) == {"ingest_msgs_per_s", "search_p50_ms", "search_p95_ms", "keyword_p95_ms",
                                      "vector_p95_ms"}
    assert all(value > 0 for value in run["postgresql"].values())
