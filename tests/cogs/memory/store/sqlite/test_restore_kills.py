"""A restore killed at each of its steps (a child process that ends itself there, as kill -9 would): the next open
finishes it or undoes it, says which in one line, and leaves no stray copy; never an empty memory."""

from __future__ import annotations

import io
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.backup import backup_database
from cogs.memory.store.sqlite.restore_journal import KILL_ENV, KILL_POINTS, KILLED_STATUS
from cogs.memory.store.sqlite.store import NewRow, SqliteStore, WriteBatch
from tests.fixtures.core import RecordFactory

ROOT = Path(__file__).resolve().parents[5]
# Killed before the point of no return: undone, the old memory (9 messages) stays. From there on: finished, the
# backup's 3 messages. After the journal is cleared there is nothing left to do.
UNDONE = ("journal-written", "copying", "copied")
FINISHED = ("held", "moved-aside", "swapped", "indexes-removed", "kept")
STRAY = (".restoring", ".part", ".restore.json", ".replaced-", "-journal")


class Data:
    """A data folder with a memory of 9 messages, an index file, and a backup of its first 3 outside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "data"
        self.db = self.folder / "memory.sqlite3"
        self.indexes = self.folder / "indexes"
        self.kept = root / "kept"
        self.backup = root / "backup.sqlite3"

    def restore_killed_at(self, point: str) -> subprocess.CompletedProcess[str]:
        """``python -m cogs.memory restore``, in a child process that ends itself at ``point``."""
        environment = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
        environment[KILL_ENV] = point
        return subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(self.db), "--index-dir",
                               str(self.indexes), "restore", str(self.backup), "--keep-replaced", str(self.kept)],
                              cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120)

    def stray(self) -> list[str]:
        return sorted(path.name for path in self.folder.rglob("*") if any(mark in path.name for mark in STRAY))

    def kept_files(self) -> list[Path]:
        return sorted(self.kept.glob("*")) if self.kept.exists() else []


async def write(db: Path, make_record: RecordFactory, ids: range) -> None:
    store = await SqliteStore.open(db)
    try:
        batch = WriteBatch("test-model", guild_ids={1})
        batch.inserts = [NewRow(rowid, make_record(message_id, f"note {message_id}"), f"note {message_id}",
                                f"note {message_id}", np.ones(8, dtype=np.float32))
                         for rowid, message_id in zip(store.allocate_rowids(len(ids)), ids, strict=True)]
        await store.write(batch)
    finally:
        await store.close()


def count(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        connection.close()


@pytest.fixture
async def data(tmp_path: Path, make_record: RecordFactory) -> Data:
    data = Data(tmp_path)
    await write(data.db, make_record, range(1, 4))
    backup_database(data.db, data.backup)
    await write(data.db, make_record, range(4, 10))
    data.indexes.mkdir()
    (data.indexes / "1-model.faiss").write_bytes(b"an index of the database being replaced")
    return data


async def opened(data: Data, caplog: pytest.LogCaptureFixture) -> tuple[int, list[str]]:
    """Open the store as memory does; returns how many messages it holds and the warnings it logged."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        store = await SqliteStore.open(data.db)
    try:
        messages = await store.count_messages(1)
    finally:
        await store.close()
    return messages, [record.getMessage() for record in caplog.records if record.levelno == logging.WARNING]


def test_every_kill_point_is_tested() -> None:
    assert set(UNDONE + FINISHED + ("cleared",)) == set(KILL_POINTS)


@pytest.mark.parametrize("point", UNDONE)
async def test_a_restore_killed_before_its_point_of_no_return_is_undone(
    data: Data, point: str, caplog: pytest.LogCaptureFixture
) -> None:
    child = data.restore_killed_at(point)
    assert child.returncode == KILLED_STATUS, child.stderr
    messages, lines = await opened(data, caplog)
    assert (messages, data.stray(), data.kept_files()) == (9, [], [])
    assert lines == [f"A restore of {data.backup} into {data.db} was cut short before it replaced anything: rolled "
                     "back; memory is the database it was before the restore (run the restore again)"]
    assert (data.indexes / "1-model.faiss").exists()  # it still describes the database memory holds


@pytest.mark.parametrize("point", FINISHED)
async def test_a_restore_killed_after_its_point_of_no_return_is_finished(
    data: Data, point: str, caplog: pytest.LogCaptureFixture
) -> None:
    child = data.restore_killed_at(point)
    assert child.returncode == KILLED_STATUS, child.stderr
    messages, lines = await opened(data, caplog)
    kept = data.kept_files()
    assert (messages, data.stray(), len(kept), [count(path) for path in kept]) == (3, [], 1, [9])
    assert (oct(kept[0].stat().st_mode & 0o777), list(data.indexes.iterdir())) == ("0o600", [])
    assert lines == [f"A restore of {data.backup} into {data.db} was cut short after its point of no return: "
                     f"finished it; memory is the restored backup (3 messages); the database it replaced is kept as "
                     f"{kept[0]}"]


async def test_a_restore_killed_once_its_journal_is_cleared_has_nothing_left_to_do(
    data: Data, caplog: pytest.LogCaptureFixture
) -> None:
    child = data.restore_killed_at("cleared")
    assert child.returncode == KILLED_STATUS, child.stderr
    messages, lines = await opened(data, caplog)
    assert (messages, lines, data.stray(), len(data.kept_files())) == (3, [], [], 1)


async def test_a_copy_damaged_while_the_restore_was_killed_between_its_renames_puts_the_old_database_back(
    data: Data, caplog: pytest.LogCaptureFixture
) -> None:
    assert data.restore_killed_at("moved-aside").returncode == KILLED_STATUS
    incoming = data.db.with_name("memory.sqlite3.restoring")
    with open(incoming, "r+b") as file:  # the copy's pages overwritten after its header
        file.seek(4096)
        file.write(b"\xff" * 8192)
    messages, lines = await opened(data, caplog)
    assert (messages, data.stray(), data.kept_files()) == (9, [], [])
    assert len(lines) == 1 and "its copy failed its check" in lines[0] and "rolled back" in lines[0]


async def test_memory_opens_the_restored_database_after_a_restore_killed_between_its_renames(
    data: Data, core_profile: MemoryProfile, embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The bot's start: not "no guilds in memory yet" on an empty database, but the restored one, said once."""
    assert data.restore_killed_at("moved-aside").returncode == KILLED_STATUS
    with caplog.at_level(logging.WARNING):
        memory = await Memory.open(core_profile, data.db, data.indexes)
    try:
        guilds, messages = await memory.guild_ids(), (await memory.stats(1)).messages
    finally:
        await memory.close()
    finished = [record.getMessage() for record in caplog.records if "cut short" in record.getMessage()]
    assert (guilds, messages, len(finished), data.stray()) == ([1], 3, 1, [])


async def test_a_command_after_a_restore_killed_between_its_renames_says_it_finished_it(data: Data) -> None:
    assert data.restore_killed_at("moved-aside").returncode == KILLED_STATUS
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(data.db), "check"]), out, err)
    kept = data.kept_files()
    assert (code, out.getvalue(), err.getvalue()) == (
        0, f"{data.db}: no damage found\n",
        f"A restore of {data.backup} into {data.db} was cut short after its point of no return: finished it; memory "
        f"is the restored backup (3 messages); the database it replaced is kept as {kept[0]}\n")


async def test_an_unreadable_journal_beside_the_database_is_rolled_back(
    data: Data, caplog: pytest.LogCaptureFixture
) -> None:
    data.db.with_name("memory.sqlite3.restore.json").write_text('{"v": 1, "step": "swa')
    data.db.with_name("memory.sqlite3.restoring").write_bytes(b"half a copy")
    messages, lines = await opened(data, caplog)
    assert (messages, data.stray()) == (9, [])
    assert lines == [f"A restore of a backup into {data.db} was cut short before it replaced anything: rolled back; "
                     "memory is the database it was before the restore (run the restore again)"]
