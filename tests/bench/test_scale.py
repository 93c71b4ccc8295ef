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
