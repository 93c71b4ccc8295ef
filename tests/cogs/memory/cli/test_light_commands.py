"""The light terminal: commands that only read or erase what memory holds import no model library (torch,
sentence-transformers, transformers) and, but for a forget that rewrites a guild's vector index, no FAISS. Each
runs as an admin runs it, in a fresh interpreter, which then says what it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
MODEL_LIBRARIES = ("torch", "sentence_transformers", "transformers")
HEAVY = (*MODEL_LIBRARIES, "faiss")
# Runs one command as ``python -m cogs.memory`` does, then writes its exit code and the heavy modules it imported.
SCRIPT = """
import json, sys
from cogs.memory.__main__ import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as report:
    json.dump({{"code": code, "imported": sorted(name for name in {heavy!r} if name in sys.modules)}}, report)
"""


def run_command(tmp_path: Path, profile: Path, *argv: str) -> tuple[dict[str, object], str]:
    data = tmp_path / "data"
    report = tmp_path / "imported.json"
    environ = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(heavy=HEAVY), str(report), "--db",
                           str(data / "m.sqlite3"), "--index-dir", str(data / "idx"), "--profile", str(profile),
                           *argv], cwd=REPO, env=environ, capture_output=True, text=True, timeout=300)
    assert report.exists(), done.stderr
    return json.loads(report.read_text()), done.stdout + done.stderr


@pytest.mark.parametrize("argv", [("stats",), ("guilds",), ("channels", "--guild", "1"), ("check",),
                                  ("reapply-erasures",), ("backup", "BACKUP")], ids=lambda argv: argv[0])
async def test_a_read_only_command_imports_no_model_library_and_no_faiss(two_guilds: Path, tmp_path: Path,
                                                                        tiny_profiles_dir: Path,
                                                                        argv: tuple[str, ...]) -> None:
    argv = tuple(str(tmp_path / "backup.sqlite3") if arg == "BACKUP" else arg for arg in argv)
    report, printed = run_command(tmp_path, tiny_profiles_dir / "tiny-a.toml", *argv)
    assert report == {"code": 0, "imported": []}, printed


async def test_stats_reads_the_vectors_from_sqlite_without_loading_an_index(two_guilds: Path, tmp_path: Path,
                                                                           tiny_profiles_dir: Path) -> None:
    report, printed = run_command(tmp_path, tiny_profiles_dir / "tiny-a.toml", "stats", "--guild", "1")
    assert report["imported"] == []
    assert "4 messages, 4 vectors (0 pending), 2 channels" in printed


async def test_forget_imports_no_model_library_and_leaves_no_vector_of_what_it_forgot(
        two_guilds: Path, tmp_path: Path, tiny_profiles_dir: Path, cli) -> None:
    report, printed = run_command(tmp_path, tiny_profiles_dir / "tiny-a.toml", "forget", "--guild", "1",
                                  "--member", "6", "--yes")
    assert report["code"] == 0, printed
    # FAISS only to rewrite guild 1's index without bob's two vectors (docs/operations.md).
    assert not set(MODEL_LIBRARIES) & set(report["imported"])  # type: ignore[arg-type]
    assert "Rebuilding" not in printed  # the index loaded before the store changed: checked, not rebuilt
    code, out, err = await cli("stats", "--guild", "1")
    assert code == 0 and "2 messages, 2 vectors (0 pending)" in out, err
    code, out, _ = await cli("search", "picnic cake", "--guild", "1", "--no-rerank")
    assert code == 0 and "bake a picnic cake" not in out
