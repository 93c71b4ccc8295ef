"""`check` hashes the ONNX exports beside the database whole: damage a start's sampled check cannot see is reported,
and `check --repair` removes the export so the next start writes it again."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np

from cogs.memory.cli import parse_args, run
from cogs.memory.runtime.export_manifest import EDGE_BYTES, export_problem, write_manifest
from cogs.memory.store.sqlite.store import NewRow, SqliteStore, WriteBatch
from tests.fixtures.core import RecordFactory

FIELDS = {"format": 1, "model": "tiny", "revision": "abc", "variant": "fp32"}


async def a_database(db_path: Path, make_record: RecordFactory) -> None:
    store = await SqliteStore.open(db_path)
    batch = WriteBatch("test-model", guild_ids={1})
    batch.inserts = [NewRow(rowid, make_record(rowid, "picnic"), "picnic", "picnic", np.ones(8, dtype=np.float32))
                     for rowid in store.allocate_rowids(3)]
    await store.write(batch)
    await store.close()


def an_export(db_path: Path) -> Path:
    folder = db_path.parent / "onnx" / "tiny-abc-fp32"
    folder.mkdir(parents=True)
    (folder / "weights.bin").write_bytes(os.urandom(8 << 20))
    (folder / "model.onnx").write_bytes(b"graph")
    write_manifest(folder, FIELDS)
    return folder


def silently_damaged(folder: Path) -> None:
    """4 KiB changed between the blocks a start samples, the modification time put back (a failing disk)."""
    weights = folder / "weights.bin"
    status = weights.stat()
    with weights.open("r+b") as fh:
        fh.seek(EDGE_BYTES + 100_000)
        fh.write(os.urandom(4096))
    os.utime(weights, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert export_problem(folder, FIELDS) is None  # what a start sees


async def check(db_path: Path, *options: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(db_path), "check", *options]), out, err)
    return code, out.getvalue(), err.getvalue()


async def test_check_hashes_the_exports_whole_and_reports_damage_a_start_cannot_see(
    db_path: Path, make_record: RecordFactory
) -> None:
    await a_database(db_path, make_record)
    folder = an_export(db_path)
    silently_damaged(folder)
    assert await check(db_path) == (1, "", (
        f"error: the ONNX export {folder} weights.bin does not match its SHA-256 (it changed since the export); run "
        "`python -m cogs.memory check --repair` with memory stopped to remove it (the next start exports it "
        "again)\n"))
    assert folder.is_dir()


async def test_check_repair_removes_a_damaged_export(db_path: Path, make_record: RecordFactory) -> None:
    await a_database(db_path, make_record)
    folder = an_export(db_path)
    silently_damaged(folder)
    assert await check(db_path, "--repair") == (0, (
        f"the ONNX export {folder} weights.bin does not match its SHA-256 (it changed since the export); removed it: "
        f"the next start exports it again\n{db_path}: no damage found\n"), "")
    assert not folder.exists()


async def test_check_leaves_whole_exports_alone(db_path: Path, make_record: RecordFactory) -> None:
    await a_database(db_path, make_record)
    folder = an_export(db_path)
    assert await check(db_path, "--repair") == (0, f"{db_path}: no damage found\n", "")
    assert folder.is_dir()
