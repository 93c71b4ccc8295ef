"""A command with the model hub unreachable (a closed local port as HF_ENDPOINT): offline at once, said once, no
retry storm, and the answer in first-stage order."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cogs.memory.runtime.test_hub_probe import closed_port
from tests.fixtures.discord import TINY_PROFILE_TOML

REPO = Path(__file__).resolve().parents[4]


async def test_a_search_with_the_hub_unreachable_says_so_once_and_never_retries(two_guilds: Path, tmp_path: Path,
                                                                               tiny_profiles_dir: Path) -> None:
    """The reranker is named by a hub id the empty cache lacks: the command goes offline at once, says so once,
    and answers in first-stage order."""
    profile = tmp_path / "hub.toml"
    profile.write_text(TINY_PROFILE_TOML.format(name="hub", model="example-org/uncached-reranker", batch_size=4,
                                                embedding_batch_size=32), encoding="utf-8")
    environ = {name: value for name, value in os.environ.items() if name not in (
        "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "LOG_LEVEL")}
    environ.update(HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}", HF_HOME=str(tmp_path / "hf"))
    data = two_guilds.parent
    done = subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(two_guilds), "--index-dir",
                           str(data / "idx"), "--profile", str(profile), "search", "picnic", "--guild", "1"],
                          cwd=REPO, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "the picnic moved to Saturday" in done.stdout
    assert done.stderr.count("cannot be reached") == 1, done.stderr
    assert "Retrying" not in done.stderr and "retry" not in done.stderr.lower(), done.stderr
