"""A restore brings back nothing any surviving record says was erased, even with the erasure ledger lost or
damaged, and moves the database it replaces out of the data folder (or deletes it)."""

from __future__ import annotations

import io
import os
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.memory import Memory
from cogs.memory.privacy.ledger import LEDGER_NAME
from cogs.memory.records import SearchFilters
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.backup import BackupError, backup_database, restore_database
from tests.fixtures.core import RecordFactory

SECRET = "zebracode"
KEPT = "quokkas"


def readable_in(folder: Path, word: str) -> list[str]:
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*")
                  if path.is_file() and word.encode() in path.read_bytes())


async def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(list(argv)), out, err)
    return code, out.getvalue(), err.getvalue()


class Folders:
    def __init__(self, root: Path) -> None:
        self.data = root / "data"
        self.db = self.data / "memory.sqlite3"
        self.indexes = self.data / "indexes"
        self.ledger = self.data / LEDGER_NAME
        self.backup = root / "backup.sqlite3"

    async def open(self, profile: MemoryProfile) -> Memory:
        return await Memory.open(profile, self.db, self.indexes)

    async def restore(self) -> tuple[int, str, str]:
        return await cli("--db", str(self.db), "--index-dir", str(self.indexes), "restore", str(self.backup))


@pytest.fixture
def folders(tmp_path: Path) -> Folders:
    return Folders(tmp_path)


async def forgotten_after_a_backup(folders: Folders, profile: MemoryProfile, make_record: RecordFactory) -> None:
    """Three messages with vectors, a backup, then message 1 forgotten (in the ledger and the database's table)."""
    memory = await folders.open(profile)
    try:
        await memory.add(make_record(1, f"the {SECRET} opens the harbour gate"))
        await memory.add(make_record(2, f"the {KEPT} are fed at noon"))
        await memory.add(make_record(3, "the ferry leaves at nine"))
        await memory.flush(vectors=True)
        backup_database(folders.db, folders.backup)
        await memory.forget_message(1, 1)
    finally:
        await memory.close()


def lose(ledger: Path) -> None:
    ledger.unlink()


def tear(ledger: Path) -> None:
    """Its only line cut in half, as a disk fault or a careless edit leaves it."""
    text = ledger.read_text()
    ledger.write_text(text[: len(text) // 2])


async def what_memory_holds(folders: Folders, profile: MemoryProfile) -> tuple[set[int], list[int], list[int], int]:
    """(stored ids, hits for the secret's word and for its meaning, vectors in guild 1's index)."""
    memory = await folders.open(profile)
    try:
        stored, _ = await memory.known_message_ids([1, 2, 3])
        by_word = [hit.message_id for hit in await memory.search(SECRET, SearchFilters(guild_id=1), 5)]
        by_meaning = [hit.message_id for hit in
                      await memory.search("what unlocks the gate at the port", SearchFilters(guild_id=1), 1)]
        index = memory.indexes.get(1)
        vectors = 0 if index is None else len(index)
    finally:
        await memory.close()
    return stored, by_word, by_meaning, vectors


@pytest.mark.parametrize("fault", [lose, tear], ids=["ledger deleted", "ledger torn"])
async def test_a_restore_brings_back_nothing_the_database_it_replaces_knew_was_erased(
    folders: Folders, core_profile: MemoryProfile, make_record: RecordFactory, embedder: object,
    fault: Callable[[Path], None]
) -> None:
    await forgotten_after_a_backup(folders, core_profile, make_record)
    fault(folders.ledger)
    code, out, err = await folders.restore()
    assert (code, err, ", 1 erasures made since to apply as memory opens;" in out) == (0, "", True)
    stored, by_word, by_meaning, vectors = await what_memory_holds(folders, core_profile)
    assert (stored, 1 in by_word, 1 in by_meaning, vectors) == ({2, 3}, False, False, 2)
    assert (readable_in(folders.data, SECRET), readable_in(folders.data, KEPT)) == ([], ["memory.sqlite3"])


async def test_the_ledger_holds_again_what_the_replaced_database_knew(
    folders: Folders, core_profile: MemoryProfile, make_record: RecordFactory, embedder: object
) -> None:
    await forgotten_after_a_backup(folders, core_profile, make_record)
    entry = folders.ledger.read_text()
    lose(folders.ledger)
    assert (await folders.restore())[0] == 0
    assert folders.ledger.read_text() == entry


async def test_a_ledger_lost_after_the_restore_cannot_bring_back_what_it_erased(
    folders: Folders, core_profile: MemoryProfile, make_record: RecordFactory, embedder: object
) -> None:
    """The restored file itself holds what the replaced database knew, until memory has applied it."""
    await forgotten_after_a_backup(folders, core_profile, make_record)
    assert (await folders.restore())[0] == 0
    lose(folders.ledger)
    stored, by_word, by_meaning, vectors = await what_memory_holds(folders, core_profile)
    assert (stored, 1 in by_word, 1 in by_meaning, vectors) == ({2, 3}, False, False, 2)
    assert readable_in(folders.data, SECRET) == []
    with sqlite3.connect(folders.db) as connection:  # applied: the restore's note of it is gone on the next open
        held = connection.execute("SELECT name FROM sqlite_master WHERE name = 'erasures_to_apply'").fetchall()
    assert held == [("erasures_to_apply",)]
    memory = await folders.open(core_profile)
    await memory.close()
    with sqlite3.connect(folders.db) as connection:
        held = connection.execute("SELECT name FROM sqlite_master WHERE name = 'erasures_to_apply'").fetchall()
    assert held == []


# -- the database a restore replaces ------------------------------------------------------------------------------


async def memory_of(db: Path, backup: Path) -> None:
    """A database file and a backup of it (no models needed: the restore only copies files)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as connection:
        connection.executescript("CREATE TABLE messages (id INTEGER PRIMARY KEY, content TEXT);"
                                 "CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL);"
                                 "INSERT INTO messages (content) VALUES ('kept note');")
    connection.close()
    backup_database(db, backup)


async def test_a_folder_for_the_replaced_database_inside_the_data_folder_is_refused(folders: Folders) -> None:
    await memory_of(folders.db, folders.backup)
    before = sorted(path.name for path in folders.data.iterdir())
    with pytest.raises(BackupError) as error:
        restore_database(folders.backup, folders.db, folders.indexes, keep_replaced_in=folders.data / "old")
    assert str(error.value) == (
        f"{folders.data / 'old'} is inside the data folder {folders.data}: the replaced database must be kept "
        "outside it (--keep-replaced DIR) or deleted (--discard-replaced)")
    assert sorted(path.name for path in folders.data.iterdir()) == before


async def test_a_replaced_database_is_deleted_when_asked(folders: Folders, tmp_path: Path) -> None:
    await memory_of(folders.db, folders.backup)
    code, out, err = await cli("--db", str(folders.db), "--index-dir", str(folders.indexes), "restore",
                               str(folders.backup), "--discard-replaced")
    assert (code, err, "; the database it replaced was deleted;" in out) == (0, "", True)
    assert sorted(path.name for path in tmp_path.rglob("*")) == [
        "backup.sqlite3", "data", "memory.sqlite3", "memory.sqlite3.lock"]


@pytest.mark.skipif(not Path("/dev/shm").is_dir() or not os.access("/dev/shm", os.W_OK), reason="no /dev/shm")
async def test_a_replaced_database_is_copied_to_another_file_system_whole(folders: Folders) -> None:
    await memory_of(folders.db, folders.backup)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        if os.stat(other).st_dev == os.stat(folders.data).st_dev:
            pytest.skip("/dev/shm is on the same file system here")
        done = restore_database(folders.backup, folders.db, folders.indexes, keep_replaced_in=Path(other) / "old")
        assert done.replaced is not None
        with sqlite3.connect(done.replaced) as connection:
            content = connection.execute("SELECT content FROM messages").fetchall()
        connection.close()
        assert (content, oct(done.replaced.stat().st_mode & 0o777),
                sorted(path.name for path in done.replaced.parent.iterdir()),
                sorted(path.name for path in folders.data.iterdir())) == (
            [("kept note",)], "0o600", [done.replaced.name], ["memory.sqlite3", "memory.sqlite3.lock"])
