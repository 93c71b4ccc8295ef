"""bench.import_stream: its synthetic export is an export, and one import in a child reports its figures."""

from __future__ import annotations

from pathlib import Path

from bench import import_stream
from cogs.memory.chat_export.reader import open_export


def test_the_synthetic_export_reads_back_as_its_messages(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    import_stream.write_export(path, 5)
    with open_export(path) as export:
        batches = list(export.batches(10))
    assert (export.channel.message_count, [r.content for r in batches[0].records], batches[0].rejected) == (
        5, [f"note {n}" for n in range(5)], [])


def test_one_import_in_a_child_stores_every_message_and_reports_its_figures(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    import_stream.write_export(path, 50)
    run = import_stream.run_import(import_stream.REPO, path, tmp_path / "run", 50)
    assert (run["stored"], run["exit_status"], run["summary"].split(";")[0]) == (
        50, 1, "imported 1 of 1 file(s): 50 stored, 0 already stored, 0 skipped, 0 rejected")
    assert run["peak_rss_mb"] > 0 and run["cpu_s"] > 0 and run["max_loop_stall_ms"] is not None
