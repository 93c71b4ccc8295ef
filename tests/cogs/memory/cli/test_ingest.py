"""``python -m cogs.memory import`` as an admin runs it, in a process of its own: Ctrl-C stops it cleanly, with what it
stored said and kept."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
MESSAGES = 50_000
PROFILE = """\
description = "cpu-small, reranking off"
device = "cpu"
dtype = "float32"

[reranker]
enabled = false
"""


def write_export(path: Path, count: int) -> Path:
    with open(path, "w", encoding="utf-8") as file:
        file.write('{"guild": {"id": "1", "name": "Picnic Club"}, "channel": {"id": "20", "type": "GuildTextChat", '
                   '"categoryId": null, "name": "general"}, "messages": [')
        file.write(",".join(json.dumps({
            "id": str(1000 + n), "type": "Default", "timestamp": f"2024-05-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:"
            f"{n % 60:02d}+00:00", "timestampEdited": None, "content": f"picnic note {n}",
            "author": {"id": "5", "name": "alice", "nickname": None, "isBot": False}, "attachments": [], "embeds": [],
        }) for n in range(count)))
        file.write("]}")
    return path


def stored_count(db: Path) -> int:
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        connection.close()


def test_ctrl_c_mid_import_stores_what_was_read_says_where_it_stopped_and_exits_130(tmp_path: Path) -> None:
    export = write_export(tmp_path / "export.json", MESSAGES)
    (tmp_path / "profile.toml").write_text(PROFILE, encoding="utf-8")
    db = tmp_path / "data" / "memory.sqlite3"
    command = [sys.executable, "-m", "cogs.memory", "--db", str(db), "--index-dir", str(tmp_path / "data" / "indexes"),
               "--profile", str(tmp_path / "profile.toml"), "import", str(export)]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    process = subprocess.Popen(command, cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    seen: list[str] = []
    try:
        assert process.stderr is not None
        # The first progress line (a tenth stored, away from a terminal): the import is under way.
        for line in process.stderr:
            seen.append(line)
            if line.startswith("Picnic Club #general: "):
                break
        process.send_signal(signal.SIGINT)
        out, rest = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    err = "".join(seen) + rest
    lines = out.splitlines()
    where = re.fullmatch(rf"{re.escape(str(export))}: #general \(guild 1\): (\d+) stored, 0 already stored, "
                         rf"0 skipped, 0 rejected; interrupted after message (\d+) of {MESSAGES}", out.split("\n")[0])
    assert where is not None, (out, err)
    stored, read = int(where[1]), int(where[2])
    assert (process.returncode, "Traceback" in err, stored, len(lines)) == (130, False, read, 2), err
    assert 0 < stored < MESSAGES and stored_count(db) == stored
    assert lines[1].startswith(f"interrupted: 0 of 1 file(s) imported whole: {stored} stored, 0 already stored, "
                               "0 skipped, 0 rejected; ")
    assert "interrupted: storing what was read, then stopping\n" in err
