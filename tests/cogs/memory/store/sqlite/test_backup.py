"""Backups through SQLite's online backup API while another process writes, and restores while memory is stopped."""

from __future__ import annotations

import io
import logging
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.store.sqlite.backup import BackupError, backup_database, restore_database
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import SearchFilters
from cogs.memory.store.sqlite.store import SqliteStore, NewRow, WriteBatch
from tests.fixtures.core import RecordFactory

# Commits one message per transaction, as fast as it can, until its stdin closes; says "writing" after the first.
WRITER = """
import sqlite3, sys, threading
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA busy_timeout = 5000")
n = 0
while not done.is_set():
    n += 1
    c.execute("INSERT INTO messages (message_id, guild_id, channel_id, author_id, author_name, content, created_at)"
              " VALUES (?, 1, 10, 100, 'writer', 'written during the backup', 0)", (10**9 + n,))
    if n == 1:
        print("writing", flush=True)
"""


async def stored(db_path: Path, make_record: RecordFactory, ids: range) -> None:
    store = await SqliteStore.open(db_path)
    batch = WriteBatch("test-model", guild_ids={1})
    batch.inserts = [NewRow(rowid, make_record(message_id, f"note {message_id}"), f"note {message_id}",
                            f"note {message_id}", np.ones(8, dtype=np.float32))
                     for rowid, message_id in zip(store.allocate_rowids(len(ids)), ids, strict=True)]
    await store.write(batch)
    await store.close()


def count(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    finally:
        connection.close()


async def test_a_backup_taken_while_another_process_writes_is_whole(
    db_path: Path, tmp_path: Path, make_record: RecordFactory
) -> None:
    await stored(db_path, make_record, range(1, 3001))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "writing\n"
        committed_before = count(db_path)  # in the WAL, not yet in the database file
        made = backup_database(db_path, tmp_path / "backup.sqlite3")
    finally:
        writer.communicate("", timeout=30)
    copy = sqlite3.connect(made.path)
    check, mode, ids = (copy.execute("PRAGMA integrity_check").fetchone()[0],
                        copy.execute("PRAGMA journal_mode").fetchone()[0],
                        [row[0] for row in copy.execute("SELECT id FROM messages ORDER BY id")])
    copy.close()
    assert (check, mode, made.messages >= committed_before, ids == list(range(1, len(ids) + 1))) == (
        "ok", "delete", True, True)
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith("backup")) == ["backup.sqlite3"]


async def test_a_backup_into_a_folder_gets_a_dated_name(db_path: Path, tmp_path: Path, make_record: RecordFactory) -> None:
    await stored(db_path, make_record, range(1, 4))
    (tmp_path / "backups").mkdir()
    made = backup_database(db_path, tmp_path / "backups")
    assert (re.fullmatch(r"memory-\d{8}-\d{6}\.sqlite3", made.path.name) is not None, made.messages) == (True, 3)


async def test_a_destination_ending_in_a_slash_is_a_new_folder(
    db_path: Path, tmp_path: Path, make_record: RecordFactory
) -> None:
    await stored(db_path, make_record, range(1, 4))
    made = backup_database(db_path, f"{tmp_path / 'backups'}/")
    assert (made.path.parent == tmp_path / "backups", re.fullmatch(r"memory-\d{8}-\d{6}\.sqlite3", made.path.name)
            is not None, count(made.path)) == (True, True, 3)


async def test_a_new_file_name_is_a_file_in_a_folder_made_for_it(
    db_path: Path, tmp_path: Path, make_record: RecordFactory
) -> None:
    await stored(db_path, make_record, range(1, 4))
    made = backup_database(db_path, str(tmp_path / "backups" / "monday.sqlite3"))
    assert (made.path, count(made.path)) == (tmp_path / "backups" / "monday.sqlite3", 3)


async def test_a_folder_backup_from_a_terminal_works_twice_in_a_row(
    db_path: Path, tmp_path: Path, make_record: RecordFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    await stored(db_path, make_record, range(1, 4))
    monkeypatch.chdir(tmp_path)  # the README's command, word for word: `backup backups/` on a fresh install
    first = await cli("--db", str(db_path), "backup", "backups/")
    second = await cli("--db", str(db_path), "backup", "backups/")
    made = sorted((tmp_path / "backups").iterdir())
    assert ((first[0], first[2]), (second[0], second[2]), len(made), [count(path) for path in made]) == (
        (0, ""), (0, ""), 2, [3, 3])


async def test_a_backup_never_overwrites_a_file(db_path: Path, tmp_path: Path, make_record: RecordFactory) -> None:
    await stored(db_path, make_record, range(1, 4))
    (tmp_path / "old.sqlite3").write_text("an older backup")
    with pytest.raises(BackupError) as error:
        backup_database(db_path, tmp_path / "old.sqlite3")
    assert str(error.value) == f"{tmp_path / 'old.sqlite3'} already exists; give a new file name or a folder"


async def test_a_restore_is_refused_while_memory_has_the_database_open(
    db_path: Path, tmp_path: Path, make_record: RecordFactory
) -> None:
    await stored(db_path, make_record, range(1, 4))
    backup = backup_database(db_path, tmp_path / "backup.sqlite3").path
    store = await SqliteStore.open(db_path)  # the bot, running
    try:
        with pytest.raises(BackupError) as error:
            restore_database(backup, db_path, tmp_path / "indexes")
    finally:
        await store.close()
    assert str(error.value) == (f"{db_path} is in use (the bot or another `python -m cogs.memory` has it open); "
                                "stop it, then restore")


async def test_a_restore_moves_the_database_it_replaced_out_of_the_data_folder(
    tmp_path: Path, make_record: RecordFactory
) -> None:
    db_path = tmp_path / "data" / "memory.sqlite3"
    await stored(db_path, make_record, range(1, 4))
    backup = backup_database(db_path, tmp_path / "backup.sqlite3").path
    await stored(db_path, make_record, range(4, 10))
    done = restore_database(backup, db_path, tmp_path / "data" / "indexes")
    assert done.replaced is not None
    assert (done.messages, count(db_path), done.replaced.parent, count(done.replaced)) == (
        3, 3, tmp_path / "backups", 9)
    assert (oct(done.replaced.stat().st_mode & 0o777), oct(done.replaced.parent.stat().st_mode & 0o777)) == (
        "0o600", "0o700")
    assert sorted(path.name for path in db_path.parent.iterdir()) == ["memory.sqlite3", "memory.sqlite3.lock"]


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100])
def test_a_restore_refuses_what_is_not_a_memory_database(tmp_path: Path, content: bytes) -> None:
    source = tmp_path / "other.sqlite3"
    if content:
        source.write_bytes(content)
    else:
        sqlite3.connect(source).execute("CREATE TABLE notes (text TEXT)").connection.close()
    with pytest.raises(BackupError) as error:
        restore_database(source, tmp_path / "memory.sqlite3", tmp_path / "indexes")
    assert str(error.value) == (f"{source} is not a readable SQLite database (file is not a database)" if content
                                else f"{source} is not a memory database (it has no messages table)")


async def test_after_a_restore_the_vector_indexes_are_rebuilt_from_the_restored_database(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, tmp_path: Path, make_record: RecordFactory,
    embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.add(make_record(1, "the picnic moved to Saturday"))
    await memory.flush(vectors=True)
    backup = backup_database(db_path, tmp_path / "backup.sqlite3").path
    await memory.add(make_record(2, "the lake cabin is booked for July"))
    await memory.close()
    restore_database(backup, db_path, index_dir, discard_replaced=True)
    with caplog.at_level(logging.INFO):
        reopened = await Memory.open(core_profile, db_path, index_dir)
    try:
        hits = await reopened.search("lake cabin in July", SearchFilters(guild_id=1), 5)
        vectors = (await reopened.stats(1)).index.vectors
    finally:
        await reopened.close()
    assert ([hit.message_id for hit in hits], vectors) == ([1], 1)
    assert "Vector index of guild 1 rebuilt: 1 vectors (flat)" in caplog.messages


# -- from a terminal --------------------------------------------------------------------------------------------


async def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(list(argv)), out, err)
    return code, out.getvalue(), err.getvalue()


async def test_backup_and_restore_from_a_terminal(tmp_path: Path, make_record: RecordFactory) -> None:
    db_path = tmp_path / "data" / "memory.sqlite3"
    await stored(db_path, make_record, range(1, 4))
    target = tmp_path / "backup.sqlite3"
    backed_up = await cli("--db", str(db_path), "backup", str(target))
    restored = await cli("--db", str(db_path), "--index-dir", str(tmp_path / "data" / "indexes"), "restore",
                         str(target))
    kept = next((tmp_path / "backups").glob("memory-replaced-*.sqlite3"))
    assert (backed_up, restored) == (
        (0, f"backed up {db_path} to {target}: 3 messages, {target.stat().st_size / 1e6:.1f} MB\n", ""),
        (0, f"restored {target} into {db_path}: 3 messages; the database it replaced is kept as {kept}; the vector "
            "indexes are rebuilt on the next start\n", ""))


async def test_a_refused_restore_is_one_error_line(db_path: Path, tmp_path: Path) -> None:
    assert await cli("--db", str(db_path), "restore", str(tmp_path / "nothing.sqlite3")) == (
        1, "", f"error: {tmp_path / 'nothing.sqlite3'} is not a file\n")


async def test_a_backup_of_a_postgresql_memory_points_to_pg_dump(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://memory@localhost/memory")
    assert await cli("--db", str(db_path), "backup", str(tmp_path / "backup.sqlite3")) == (
        2, "", "error: memory is kept in PostgreSQL (DATABASE_URL is set); backup works on the SQLite file: use "
               "pg_dump and pg_restore\n")
