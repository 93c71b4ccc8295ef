"""Forgetting erases: after each forget path and the purge that follows, no file under the data directory holds the
forgotten text or its vectors (real SQLite files, real FAISS files, the real MiniLM). Tests that ask for
``any_memory`` run on both stores; PostgreSQL's VACUUM is tested in tests/cogs/memory/store/postgres/test_pg_store.py."""

from __future__ import annotations

import asyncio
import random
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from cogs.memory.store.sqlite import purge
from cogs.memory.vectors import index as vector_index
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.fixtures.core import T0, RecordFactory, fetchall
from tests.fixtures.stores import fill, query
from tests.fixtures.waiting import eventually

# Lowercase letters only, and no other word here starts with "zq": FTS5 stores a term after the prefix it shares
# with the term before it, so a unique first letter keeps the whole word in the index's bytes.
NONCE = "zqjwxkvbtm"
NONCE_ID = 5000
NONCE_MINUTE = 40.5  # among the older half of the filler
FILLER = 100
CHUNK = 10  # messages per flush: each flush is at least one transaction, so the FTS5 index has several segments

ROOT = Path(__file__).resolve().parents[5]


def filler_text(seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(3, 8))) for _ in range(10))


def files_holding(data_dir: Path, needle: bytes) -> list[str]:
    """Every file under ``data_dir`` (database, WAL, shared memory, indexes, temporary files) whose raw bytes
    contain ``needle``."""
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*")
                  if path.is_file() and needle in path.read_bytes())


def where_filler(i: int) -> dict[str, int]:
    """Filler in two guilds, three channels and three authors, so every forget path keeps some of it."""
    if i % 4 == 0:
        return {"guild_id": 2, "channel_id": 20, "author_id": 100 + i % 3}
    return {"guild_id": 1, "channel_id": 10 + i % 2, "author_id": 100 + i % 3}


async def remember_nonce(memory: Memory, make_record: RecordFactory) -> list[bytes]:
    """Store the filler and the nonce's message (guild 1, channel 10, author 100); save the indexes.

    Returns the stored vectors that embed the nonce's text: its own (a vector is the message alone, so its successor's
    does not quote it).
    """
    records = [make_record(i + 1, filler_text(i), minute=i + 1, **where_filler(i)) for i in range(FILLER)]
    records.append(make_record(NONCE_ID, f"the meeting word is {NONCE} keep it quiet", minute=NONCE_MINUTE))
    records.sort(key=lambda record: record.created_at)
    for start in range(0, len(records), CHUNK):
        for record in records[start : start + CHUNK]:
            await memory.add(record)
        await memory.flush(vectors=True)
    await memory.save()
    stored = await memory.store.message(NONCE_ID)
    rows = await fetchall(memory.store, "SELECT vector FROM embeddings WHERE message_rowid = ?", (stored.rowid,))
    return [row[0] for row in rows]


def traces(data_dir: Path, vectors: list[bytes]) -> dict[str, object]:
    return {
        "text": files_holding(data_dir, NONCE.encode()),
        "vectors": [files_holding(data_dir, vector) for vector in vectors],
    }


async def forget_older_than(memory: Memory, cutoff_minute: float) -> int:
    """What the retention sweep does: delete, by id, every message older than the cutoff."""
    cutoff = (T0 + timedelta(minutes=cutoff_minute)).timestamp()
    expired: list[int] = []
    for guild_id in await memory.store.guild_ids():
        for channel_id in await memory.store.channel_ids(guild_id):
            async for message in memory.store.iter_channel(guild_id, channel_id):
                if message.created_at < cutoff:
                    expired.append(message.message_id)
    return await memory.delete(expired)


FORGET_PATHS: dict[str, Callable[[Memory], Awaitable[object]]] = {
    "message delete": lambda memory: memory.delete([NONCE_ID]),
    "channel delete": lambda memory: memory.forget_channel(1, 10),
    "guild removal": lambda memory: memory.forget_guild(1),
    "opt-out or member leave": lambda memory: memory.forget_author(1, 100),
    "retention": lambda memory: forget_older_than(memory, 50),
    "edit": lambda memory: memory.edit(NONCE_ID, "the meeting moved, nothing else to say", T0 + timedelta(days=1)),
}


@pytest.fixture
async def memory(core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: object) -> AsyncIterator[Memory]:
    memory = await Memory.open(core_profile, db_path, index_dir)
    yield memory
    await memory.close()


@pytest.mark.parametrize("path", FORGET_PATHS)
async def test_a_forget_and_its_purge_leave_no_trace_in_any_file(
    memory: Memory, make_record: RecordFactory, tmp_path: Path, path: str
) -> None:
    await assert_forget_leaves_no_trace(memory, make_record, tmp_path, path)


@pytest.mark.parametrize("path", ["message delete", "edit"])
async def test_a_forget_leaves_no_trace_when_the_index_is_a_graph(
    memory: Memory, make_record: RecordFactory, tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A graph cannot unlink a node: the forgotten vector must be zeroed in it, in memory and in its saved file.
    monkeypatch.setattr(vector_index, "FLAT_MAX", 10)
    await assert_forget_leaves_no_trace(memory, make_record, tmp_path, path)
    assert memory.indexes.get(1).kind == "hnsw"


async def assert_forget_leaves_no_trace(memory: Memory, make_record: RecordFactory, tmp_path: Path, path: str) -> None:
    vectors = await remember_nonce(memory, make_record)
    segments = (await fetchall(memory.store, "SELECT COUNT(DISTINCT segid) FROM messages_fts_idx"))[0][0]
    wal_bytes = Path(f"{memory.store.path}-wal").stat().st_size
    before = traces(tmp_path, vectors)
    await FORGET_PATHS[path](memory)
    purged = await memory.purge()
    assert (segments > 1, wal_bytes > 0) == (True, True)
    assert "memory.sqlite3-wal" in before["text"] and all(before["vectors"])
    assert (purged, traces(tmp_path, vectors)) == (True, {"text": [], "vectors": [[]]})


async def test_without_a_purge_the_forgotten_text_is_still_in_the_files(
    memory: Memory, make_record: RecordFactory, tmp_path: Path
) -> None:
    # What the purge is for: the forget alone leaves the words in the FTS5 segments and the WAL.
    memory.purges.delay = memory.purges.max_delay = 3600.0
    await remember_nonce(memory, make_record)
    await memory.delete([NONCE_ID])
    assert files_holding(tmp_path, NONCE.encode()) != []


async def test_a_forget_is_purged_in_the_background(memory: Memory, make_record: RecordFactory, tmp_path: Path) -> None:
    memory.purges.delay = 0.0
    await remember_nonce(memory, make_record)
    await memory.delete([NONCE_ID])
    await memory.purges.wait_idle()
    assert (await memory.store.purge_pending(), files_holding(tmp_path, NONCE.encode())) == (False, [])


async def test_closing_purges_what_is_pending(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: object, make_record: RecordFactory,
    tmp_path: Path,
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    memory.purges.delay = memory.purges.max_delay = 3600.0
    await remember_nonce(memory, make_record)
    await memory.delete([NONCE_ID])
    await memory.close()
    assert files_holding(tmp_path, NONCE.encode()) == []


def writes_blocked(db_path: Path) -> bool:
    """Whether a write cannot begin now: a pending TRUNCATE checkpoint holds new writers off while it waits for the
    readers of older snapshots."""
    connection = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    try:
        connection.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return True
    else:
        connection.execute("ROLLBACK")
        return False
    finally:
        connection.close()


async def test_a_purge_waits_for_a_reader_holding_an_older_snapshot(
    memory: Memory, make_record: RecordFactory, tmp_path: Path, db_path: Path
) -> None:
    await remember_nonce(memory, make_record)
    await memory.delete([NONCE_ID])
    holding, release = threading.Event(), threading.Event()

    def hold_snapshot(connection: sqlite3.Connection) -> None:
        connection.execute("BEGIN")
        connection.execute("SELECT COUNT(*) FROM messages").fetchone()
        holding.set()
        release.wait(60)
        connection.execute("COMMIT")

    reader = asyncio.create_task(memory.store.read(hold_snapshot))
    await asyncio.to_thread(holding.wait, 60)
    purging = asyncio.create_task(memory.purge())
    await eventually(lambda: asyncio.to_thread(writes_blocked, db_path), what="the purge's checkpoint is pending")
    waited_for_reader = not purging.done()
    release.set()
    await reader
    assert (waited_for_reader, await purging, files_holding(tmp_path, NONCE.encode())) == (True, True, [])


CRASH_AFTER_FORGET = """
import asyncio, os, sys
from pathlib import Path
from datetime import UTC, datetime
import numpy as np
from cogs.memory.records import MessageRecord
from cogs.memory.store.sqlite.store import SqliteStore, NewRow, WriteBatch

async def main(path, nonce):
    store = await SqliteStore.open(Path(path))
    for batch_start in range(0, 200, 20):
        rows = []
        for i, rowid in zip(range(batch_start, batch_start + 20), store.allocate_rowids(20)):
            text = f"filler words number {i}" if i != 50 else f"the word is {nonce}"
            record = MessageRecord(i + 1, 1, 10, None, 100, "alice", text, datetime(2024, 5, 1, tzinfo=UTC))
            rows.append(NewRow(rowid, record, text, text, np.full(8, i, dtype=np.float32)))
        batch = WriteBatch("test-model", guild_ids={1})
        batch.inserts = rows
        await store.write(batch)
    [ref] = await store.refs_for_message_ids([51])
    await store.write(WriteBatch("test-model", deletes=[ref.rowid], guild_ids={1}))
    os._exit(0)  # killed before any purge or clean close: the WAL stays, the pending mark with it

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_a_purge_pending_at_a_crash_runs_when_the_store_opens(db_path: Path, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", CRASH_AFTER_FORGET, str(db_path), NONCE], cwd=ROOT, check=True)
    left_by_crash = files_holding(tmp_path, NONCE.encode())
    store = await SqliteStore.open(db_path)
    pending = await store.purge_pending()
    await store.close()
    assert (left_by_crash != [], pending, files_holding(tmp_path, NONCE.encode())) == (True, False, [])


async def test_a_forget_marks_a_purge_pending_in_its_own_transaction(
    any_memory: Memory, make_record: RecordFactory
) -> None:
    any_memory.purges.delay = any_memory.purges.max_delay = 3600.0
    await any_memory.add(make_record(1, "something to forget"))
    await any_memory.flush(vectors=True)
    before = await any_memory.store.purge_pending()
    await any_memory.delete([1])
    assert (before, await any_memory.store.purge_pending()) == (False, True)


async def test_forgetting_an_author_leaves_no_row_of_theirs(any_memory: Memory, make_record: RecordFactory) -> None:
    await fill(any_memory, make_record)  # messages 1-3 by author 100 in guild 1, message 4 by them in guild 2
    await any_memory.forget_author(1, 100)
    assert await any_memory.purge()
    rows = await query(any_memory.store, "SELECT COUNT(*) FROM messages WHERE author_id = 100 AND guild_id = 1")
    vectors = await query(any_memory.store, "SELECT COUNT(*) FROM embeddings")
    assert (rows[0][0], vectors[0][0]) == (0, 1)


async def test_the_writer_zeroes_deleted_content(store: SqliteStore) -> None:
    # The writer's own setting: the read-only connections have theirs.
    assert (await store._conn.execute_fetchall("PRAGMA secure_delete"))[0][0] == 1


@pytest.mark.skipif(not purge.FTS_SECURE_DELETE, reason="FTS5 secure-delete needs SQLite 3.42 or later")
async def test_fts5_secure_delete_is_on_where_sqlite_has_it(store: SqliteStore) -> None:
    rows = await fetchall(store, "SELECT v FROM messages_fts_config WHERE k = 'secure-delete'")
    assert rows == [(1,)]


async def test_dropping_a_guild_removes_every_file_of_its_index(
    store: SqliteStore, indexes: IndexRegistry, index_dir: Path
) -> None:
    index_dir.mkdir(parents=True, exist_ok=True)
    for name in ("7.old-model.faiss", "7.current.faiss.tmp", "70.old-model.faiss"):
        (index_dir / name).write_bytes(b"vectors")
    await indexes.drop(7)
    assert sorted(path.name for path in index_dir.iterdir()) == ["70.old-model.faiss"]


async def test_stale_index_files_are_removed_and_current_ones_kept(
    store: SqliteStore, indexes: IndexRegistry, index_dir: Path
) -> None:
    index_dir.mkdir(parents=True, exist_ok=True)
    current = indexes.path_for(7).name
    for name in (current, "7.old-model.faiss", f"8.{current.partition('.')[2]}.tmp"):
        (index_dir / name).write_bytes(b"vectors")
    await indexes.remove_stale_files()
    assert sorted(path.name for path in index_dir.iterdir()) == [current]
