"""bench.pool_reads end to end on bench.pool's tiny messages/queries pair: both ways build the same pool, and the
handed way reads no more context than reading it all again."""

from __future__ import annotations

import json
from pathlib import Path

from bench import pool_reads
from tests.bench.test_pool import MESSAGES, QUERIES, write_jsonl


def test_pool_reads_counts_both_ways_and_finds_the_pools_identical(tmp_path: Path) -> None:
    out = tmp_path / "reads.json"
    pool_reads.main(["--messages", str(write_jsonl(tmp_path / "m.jsonl", MESSAGES)),
                     "--queries", str(write_jsonl(tmp_path / "q.jsonl", QUERIES)),
                     "--depth", "5", "--rounds", "1", "--candidates", "10", "--db", str(tmp_path), "--json", str(out)])
    result = json.loads(out.read_text(encoding="utf-8"))
    assert (result["queries"], result["identical_pools"]) == (1, 1)
    # Five messages: the first stage reads every window, so the pool reads none again.
    assert (result["read again"]["context_reads"], result["handed"]["context_reads"]) == (1, 0)
