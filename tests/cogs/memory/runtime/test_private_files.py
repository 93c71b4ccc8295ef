"""Memory's files are its owner's alone (cogs/memory/runtime/private_files.py): made 0600 and folders 0700 as they
are written, and what an older version left 0644 tightened as memory opens. Real files, a real Memory."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from cogs.memory.memory import Memory
from cogs.memory.runtime.private_files import make_private_folder, tighten, tighten_memory_files
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.runtime.profile_choice import save_profile_choice
from cogs.memory.store.sqlite.backup import backup_database, restore_database
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import RecordFactory

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a file's mode says who may read it on POSIX only")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def modes(*paths: Path) -> dict[str, int]:
    return {path.name: mode(path) for path in paths}


def test_new_folders_are_0700_and_old_ones_keep_their_mode(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
    make_private_folder(tmp_path / "data" / "indexes")
    assert (mode(tmp_path), mode(tmp_path / "data"), mode(tmp_path / "data" / "indexes")) == (0o755, 0o700, 0o700)


def test_tighten_drops_the_group_and_other_bits_and_follows_no_link(tmp_path: Path) -> None:
    folder = tmp_path / "onnx"
    (folder / "model").mkdir(parents=True, mode=0o755)
    os.chmod(folder, 0o755)
    (folder / "model" / "weights.bin").write_bytes(b"w")
    os.chmod(folder / "model" / "weights.bin", 0o644)
    outside = tmp_path / "someone-elses.txt"
    outside.write_text("shared")
    os.chmod(outside, 0o644)
    (folder / "link").symlink_to(outside)
    assert tighten([], [folder]) == 3
    assert (modes(folder, folder / "model", folder / "model" / "weights.bin", outside)
            == {"onnx": 0o700, "model": 0o700, "weights.bin": 0o600, "someone-elses.txt": 0o644})


def test_only_memorys_own_files_are_tightened(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for name in ("memory.sqlite3", "memory.sqlite3-wal", "memory.sqlite3.replaced-20261126-120000", "erasures.jsonl",
                 "notes.txt"):
        (data / name).write_text("x")
        os.chmod(data / name, 0o644)
    assert tighten_memory_files(data / "memory.sqlite3", tmp_path / "elsewhere", data / "onnx", ["erasures.jsonl"]) == 4
    assert mode(data / "notes.txt") == 0o644 and mode(data / "memory.sqlite3.replaced-20261126-120000") == 0o600


async def test_a_new_memory_writes_only_private_files(core_profile: MemoryProfile, tmp_path: Path,
                                                    make_record: RecordFactory, embedder: object) -> None:
    data = tmp_path / "data"
    memory = await Memory.open(core_profile, data / "memory.sqlite3", data / "indexes")
    try:
        await memory.add(make_record(1, "the picnic is on Saturday"))
        await memory.flush(vectors=True)
        await memory.indexes.save_dirty()
        written = [data, *sorted(data.rglob("*"))]
        assert {path.name for path in written} >= {"data", "memory.sqlite3", "memory.sqlite3-wal",
                                                   "memory.sqlite3-shm", "memory.sqlite3.lock", "indexes"}
        assert any(path.suffix == ".faiss" for path in written)
        assert {path.relative_to(tmp_path).as_posix(): mode(path) for path in written} == {
            path.relative_to(tmp_path).as_posix(): 0o700 if path.is_dir() else 0o600 for path in written}
    finally:
        await memory.close()


async def test_a_database_left_0644_is_0600_after_memory_opens(
    core_profile: MemoryProfile, tmp_path: Path, make_record: RecordFactory, embedder: object,
    caplog: pytest.LogCaptureFixture
) -> None:
    db_path, index_dir = tmp_path / "memory.sqlite3", tmp_path / "indexes"
    await (await SqliteStore.open(db_path)).close()
    lock = tmp_path / "memory.sqlite3.lock"
    for path in (db_path, lock):
        os.chmod(path, 0o644)  # as an older version created them
    os.chmod(tmp_path, 0o755)
    with caplog.at_level(logging.INFO, logger="cogs.memory.runtime.private_files"):
        memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.close()
    assert modes(tmp_path, db_path, lock) == {tmp_path.name: 0o700, "memory.sqlite3": 0o600,
                                              "memory.sqlite3.lock": 0o600}
    assert [r.getMessage() for r in caplog.records if r.name == "cogs.memory.runtime.private_files"] == [
        "Made 3 of memory's files and folders private (0600, folders 0700): they were readable by other users of "
        "this machine"]


async def test_backups_and_the_database_a_restore_sets_aside_are_private(tmp_path: Path) -> None:
    db_path = tmp_path / "data" / "memory.sqlite3"
    await (await SqliteStore.open(db_path)).close()
    made = backup_database(db_path, str(tmp_path / "backups") + "/")
    os.chmod(db_path, 0o644)  # a database an older version made
    restored = restore_database(made.path, db_path, tmp_path / "data" / "indexes")
    assert restored.replaced is not None
    assert modes(made.path.parent, made.path, db_path, restored.replaced) == {
        "backups": 0o700, made.path.name: 0o600, "memory.sqlite3": 0o600, restored.replaced.name: 0o600}


def test_the_saved_profile_choice_is_private(tmp_path: Path) -> None:
    save_profile_choice(tmp_path / "data" / "profile.txt", "cpu-small")
    assert modes(tmp_path / "data", tmp_path / "data" / "profile.txt") == {"data": 0o700, "profile.txt": 0o600}
