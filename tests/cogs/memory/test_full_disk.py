"""A full disk, for real: an 8 MiB tmpfs that a real import fills. One clear error and an exit, no temporary file,
nothing stored lost, search still working while the disk is full, and everything stored once space is freed.

The steps share one disk and run in file order: fill it, look at what the import left, search, free it, import again.
Without the right to mount a tmpfs the import runs under RLIMIT_FSIZE instead, and the steps that need a full
file system are skipped.
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cogs.memory.__main__ import parse_args, run

REPO = Path(__file__).resolve().parents[3]
DISK_SIZE = "8m"
# Room left for the import: a few of its batches fit, the rest do not (messages are stored before their vectors,
# so it takes a thousand of them to fill it).
ROOM_BYTES = 700 * 1024
FIRST = range(1000, 1020)
BIG = range(100_000, 101_000)
PROFILE = """\
description = "cpu-small with a short ingest queue, so an import writes in batches of ~64"
device = "cpu"
dtype = "float32"
ingest_batch_size = 16
ingest_queue_size = 64

[reranker]
enabled = false
"""


def write_export(path: Path, ids: range) -> Path:
    messages = [{"id": str(message_id), "type": "Default",
                 "timestamp": f"2024-05-01T{(n // 60) % 24:02d}:{n % 60:02d}:00+00:00", "timestampEdited": None,
                 "content": f"message {message_id}: the picnic at the lake, who brings blankets and lemonade",
                 "author": {"id": "5", "name": "alice", "nickname": None, "isBot": False}, "attachments": [],
                 "embeds": []} for n, message_id in enumerate(ids)]
    path.write_text(json.dumps({"guild": {"id": "1", "name": "Picnic Club"}, "messages": messages,
                                "channel": {"id": "20", "type": "GuildTextChat", "name": "general"}}))
    return path


@dataclass
class Disk:
    root: Path  # the small file system (or, without one, a plain folder)
    files: Path  # exports and the profile, elsewhere
    tmpfs: bool
    file_size_limit: int = 0
    import_result: subprocess.CompletedProcess[str] | None = None

    @property
    def argv(self) -> list[str]:
        return ["--db", str(self.root / "memory.sqlite3"), "--index-dir", str(self.root / "indexes"),
                "--profile", str(self.files / "profile.toml")]

    def fill(self) -> None:
        """Leave only ``ROOM_BYTES`` free."""
        if self.tmpfs:
            with open(self.root / "filler", "wb") as filler:
                filler.write(b"\0" * (shutil.disk_usage(self.root).free - ROOM_BYTES))
        else:  # the write-ahead log, where an import's writes go, may grow to this much
            self.file_size_limit = ROOM_BYTES // 3

    def free(self) -> None:
        (self.root / "filler").unlink(missing_ok=True)
        self.file_size_limit = 0

    def limit_file_size(self) -> None:  # runs in the child, before exec
        if self.file_size_limit:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size_limit, self.file_size_limit))


def stored_count(disk: Disk) -> int:
    connection = sqlite3.connect(f"file:{disk.root / 'memory.sqlite3'}?mode=ro", uri=True)
    try:
        return connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    finally:
        connection.close()


async def cli(disk: Disk, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args([*disk.argv, *argv]), out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Disk]:
    root = tmp_path_factory.mktemp("small-disk")
    files = tmp_path_factory.mktemp("exports")
    (files / "profile.toml").write_text(PROFILE)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(root)],
                             capture_output=True).returncode == 0
    try:
        yield Disk(root, files, tmpfs=mounted)
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], check=True)


async def test_an_import_that_fills_the_disk_exits_with_one_clear_error(disk: Disk) -> None:
    assert (await cli(disk, "import", str(write_export(disk.files / "first.json", FIRST))))[0] == 0
    disk.fill()
    big = write_export(disk.files / "big.json", BIG)
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # A hang (the database never closed) fails here, by the timeout.
    disk.import_result = subprocess.run([sys.executable, "-m", "cogs.memory", *disk.argv, "import", str(big)],
                                        cwd=REPO, env=environment, capture_output=True, text=True, timeout=580,
                                        preexec_fn=disk.limit_file_size)
    stored = stored_count(disk) - len(FIRST)
    reason = (f"the disk holding {disk.root / 'memory.sqlite3'} is full; free some space" if disk.tmpfs
              else "see the log above")
    assert (disk.import_result.returncode, disk.import_result.stdout.splitlines()[0]) == (1, (
        f"{big}: #general (guild 1): {stored} stored, 0 already stored, 0 skipped, 0 rejected, "
        f"{len(BIG) - stored} NOT stored ({reason})"))
    assert 0 < stored < len(BIG)


def test_the_full_disk_leaves_no_temporary_file(disk: Disk) -> None:
    assert [path.name for path in disk.root.rglob("*.tmp")] == []


def test_what_was_stored_before_the_disk_filled_is_kept(disk: Disk) -> None:
    connection = sqlite3.connect(f"file:{disk.root / 'memory.sqlite3'}?mode=ro", uri=True)
    kept = {row[0] for row in connection.execute("SELECT message_id FROM messages WHERE message_id < 100000")}
    check = connection.execute("PRAGMA quick_check").fetchone()[0]
    connection.close()
    assert (kept, check) == (set(FIRST), "ok")


async def test_search_works_while_the_disk_is_full(disk: Disk) -> None:
    if not disk.tmpfs:
        pytest.skip("needs a real full file system (mounting a tmpfs was not allowed)")
    assert shutil.disk_usage(disk.root).free < 64 * 1024
    code, out, _ = await cli(disk, "search", "message 1005: the picnic", "--no-rerank", "--limit", "1")
    assert (code, out.splitlines()[1].strip()) == (
        0, "message 1005: the picnic at the lake, who brings blankets and lemonade")


async def test_once_space_is_freed_the_same_import_stores_the_rest(disk: Disk) -> None:
    disk.free()
    before = stored_count(disk) - len(FIRST)
    code, out, _ = await cli(disk, "import", str(disk.files / "big.json"))
    assert (code, out.splitlines()[0], stored_count(disk)) == (
        0, f"{disk.files / 'big.json'}: #general (guild 1): {len(BIG) - before} stored, {before} already stored, "
           "0 skipped, 0 rejected", len(FIRST) + len(BIG))
    assert [path.name for path in disk.root.rglob("*.tmp")] == []
