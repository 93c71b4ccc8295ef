"""``kill -9`` of a real process halfway through a member's export: nothing is left that could be sent (only its work
folder, which is never a finished export), and an export run again afterwards is whole and clears that folder."""

from __future__ import annotations

import asyncio
import json
import random
import sys
import zipfile
from pathlib import Path

from cogs.memory.privacy.member_export import write_member_export
from cogs.memory.privacy.subject_access import SubjectAccess
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import RecordFactory
from tests.fixtures.export_child import PART_LIMIT, REQUEST
from tests.fixtures.stores import insert

REPOSITORY = Path(__file__).resolve().parents[4]
MESSAGES = 600


async def killed_after_its_first_part(db_path: Path, out_dir: Path, log: Path) -> None:
    with log.open("ab") as stderr:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.fixtures.export_child", str(db_path), str(out_dir),
            cwd=REPOSITORY, stdout=asyncio.subprocess.PIPE, stderr=stderr)
    assert child.stdout is not None
    try:
        assert await asyncio.wait_for(child.stdout.readline(), 120) == b"part written\n", log.read_text()
    finally:
        child.kill()
        await child.wait()


async def test_an_export_killed_halfway_leaves_nothing_to_send_and_a_retry_works(
    db_path: Path, tmp_path: Path, make_record: RecordFactory
) -> None:
    store = await SqliteStore.open(db_path)
    try:
        await insert(store, *(make_record(n, f"message {n} " + random.Random(n).randbytes(500).hex())
                              for n in range(1, MESSAGES + 1)))  # text that compresses little: several parts
    finally:
        await store.close()
    out_dir = tmp_path / "exports"
    await killed_after_its_first_part(db_path, out_dir, tmp_path / "child.log")
    left = sorted(path.name for path in out_dir.iterdir())
    store = await SqliteStore.open(db_path)
    try:
        result = await write_member_export(SubjectAccess(store), REQUEST, out_dir, part_limit=PART_LIMIT)
    finally:
        await store.close()
    ids = []
    for part in result.parts:
        with zipfile.ZipFile(part) as archive:
            ids += [m["id"] for m in json.loads(archive.read("memory.json"))["messages"]]
    assert left == [".export-1-100.partial"]  # no finished export: nothing a command would send
    assert ids == [str(n) for n in range(1, MESSAGES + 1)]
    assert [path.name for path in out_dir.iterdir()] == [result.parts[0].parent.name]
