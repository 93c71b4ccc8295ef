"""bench.loop end to end on a small burst: it runs the real cog and writes the promised JSON keys."""

import json

from bench.loop import main


def test_the_loop_benchmark_writes_its_figures(tmp_path):
    out = tmp_path / "loop.json"
    assert main(["--messages", "40", "--recalls", "2", "--data", str(tmp_path / "none"), "--json", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert {key: figures[key] for key in ("messages", "recalls")} == {"messages": 40, "recalls": 2}
    assert {"max_gap_ms", "p99_gap_ms", "ingest_msgs_per_s", "recall_p50_ms", "recall_p95_ms"} <= figures.keys()
