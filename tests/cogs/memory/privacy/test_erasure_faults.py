"""No single fault brings an erasure back (issue 33): the erasure ledger deleted, its last line torn, a byte of a middle
line changed, the ledger read-only or its disk full, a forget killed between the ledger and the database. After each,
the forgotten message is not found by its words or its meaning, not in ``messages``, the keyword index, the stored
vectors or the FAISS index, and not in the bytes of any file under the data folder. On both stores where the fault
applies; a restore is SQLite's (``restore_database``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cogs.memory.memory import Memory
from cogs.memory.privacy.known import erasures_known, keep_in_ledger
from cogs.memory.privacy.ledger import LEDGER_NAME, ErasureNotRecorded, read_ledger
from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.backup import backup_database, restore_database
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.ledger import change_a_byte, fill_the_disk, make_read_only, tear_last_line
from tests.fixtures.stores import keyword_rowids, query

# Lowercase letters no other word here starts with, so the FTS5 index holds it whole.
NONCE = "zqjwxkvbtm"
SECRET_ID, OTHER_IDS, KEPT_ID = 1001, (1002, 1003), 1004
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
TEXTS = {SECRET_ID: f"the door code for the harbour shed is {NONCE}", 1002: "bring the blue kayak on Sunday",
         1003: "the bakery opens at seven", KEPT_ID: "the quokkas are asleep in the garden"}


def record(message_id: int) -> MessageRecord:
    return MessageRecord(message_id=message_id, guild_id=1, channel_id=10, parent_channel_id=None, author_id=100,
                         author_name="ann", content=TEXTS[message_id], created_at=T0 + timedelta(minutes=message_id))


async def open_memory(profile: MemoryProfile, db_path: Path, url: str | None = None) -> Memory:
    return await Memory.open(profile, db_path, db_path.parent / "indexes", url)


async def remembered(memory: Memory) -> int:
    """Every message stored, embedded and saved; returns the secret's row id."""
    for message_id in TEXTS:
        await memory.add(record(message_id))
    await memory.flush(vectors=True)
    await memory.save()
    stored = await memory.store.message(SECRET_ID)
    assert stored is not None
    return stored.rowid


async def where_held(memory: Memory, rowid: int) -> list[str]:
    """Where memory still holds the secret: search (its words, its meaning), the tables, the FAISS index."""
    places = []
    for how, words in (("keyword search", NONCE), ("vector search", "what opens the lock on the shed by the port")):
        if SECRET_ID in [hit.message_id for hit in await memory.search(words, SearchFilters(guild_id=1), 10)]:
            places.append(how)
    if (await query(memory.store, "SELECT COUNT(*) FROM messages WHERE message_id = ?", SECRET_ID))[0][0]:
        places.append("messages")
    if rowid in await keyword_rowids(memory.store, NONCE):
        places.append("keyword index")
    if (await query(memory.store, "SELECT COUNT(*) FROM embeddings WHERE message_rowid = ?", rowid))[0][0]:
        places.append("embeddings")
    index = memory.indexes.get(1) if isinstance(memory.store, SqliteStore) else None
    if index is not None and rowid in index.ids().tolist():
        places.append("FAISS index")
    return places


def files_holding(data_dir: Path, needle: str = NONCE) -> list[str]:
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*")
                  if path.is_file() and needle.encode() in path.read_bytes())


async def forget_in_turn(memory: Memory, *message_ids: int) -> None:
    for message_id in message_ids:
        assert await memory.forget_message(1, message_id) == 1
    assert await memory.purge()


def delete_it(ledger: Path) -> None:
    ledger.unlink()


def change_the_secrets_line(ledger: Path) -> None:
    """Line 2 forgets the secret: one changed digit makes it forget message 1007, which does not exist."""
    change_a_byte(ledger, 2, str(SECRET_ID).encode(), b"1007")


# (the fault, the order of the three forgets: the secret's line is the one the fault hits)
FAULTS: dict[str, tuple[Callable[[Path], None], tuple[int, ...]]] = {
    "ledger deleted": (delete_it, (SECRET_ID, *OTHER_IDS)),
    "last line torn": (tear_last_line, (*OTHER_IDS, SECRET_ID)),
    "a byte of a middle line changed": (change_the_secrets_line, (OTHER_IDS[0], SECRET_ID, OTHER_IDS[1])),
}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("mended", ["by the restore", "by an open before the restore"])
async def test_a_forget_stays_forgotten_through_a_restore_whatever_befell_the_ledger(
    core_profile: MemoryProfile, tmp_path: Path, embedder: object, fault: str, mended: str
) -> None:
    """The live database's ``erasures`` table knew the forget: the restore (erasures_known, then keep_in_ledger, as
    store/sqlite/backup.py calls them) or an open before it (reconcile) writes it back into the ledger."""
    data_dir = tmp_path / "data"
    db_path, ledger = data_dir / "memory.sqlite3", data_dir / LEDGER_NAME
    damage, order = FAULTS[fault]
    memory = await open_memory(core_profile, db_path)
    try:
        rowid = await remembered(memory)
        backup = backup_database(db_path, tmp_path / "backup.sqlite3").path
        await forget_in_turn(memory, *order)
    finally:
        await memory.close()
    damage(ledger)
    if mended == "by the restore":
        keep_in_ledger(ledger, erasures_known(ledger, db_path))
    else:
        await (await open_memory(core_profile, db_path)).close()
    restore_database(backup, db_path, data_dir / "indexes")
    memory = await open_memory(core_profile, db_path)
    try:
        held = await where_held(memory, rowid)
        kept = await memory.has_message(KEPT_ID)
    finally:
        await memory.close()
    assert (held, kept, files_holding(data_dir)) == ([], True, [])
    assert {erasure.message_ids for erasure in read_ledger(ledger).entries} == {(SECRET_ID,), (1002,), (1003,)}


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_ledger_deleted_or_damaged_is_rebuilt_from_the_database_with_one_warning_on_either_store(
    core_profile: MemoryProfile, db_path: Path, store_url: str | None, embedder: object, fault: str,
    caplog: pytest.LogCaptureFixture
) -> None:
    ledger = db_path.parent / LEDGER_NAME
    damage, order = FAULTS[fault]
    memory = await open_memory(core_profile, db_path, store_url)
    try:
        await remembered(memory)
        await forget_in_turn(memory, *order)
    finally:
        await memory.close()
    damage(ledger)
    warnings = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            await (await open_memory(core_profile, db_path, store_url)).close()
        warnings.append([r.getMessage() for r in caplog.records if "erasure ledger" in r.getMessage()])
    first = "was missing: rebuilt it from the database's 3 erasures" if fault == "ledger deleted" else (
        "had 1 damaged line(s): line 3 (cut short)" if fault == "last line torn" else
        "had 1 damaged line(s): line 2 (checksum does not match)")
    assert [len(said) for said in warnings] == [1, 0] and first in warnings[0][0]
    reading = read_ledger(ledger)
    assert (reading.clean, sorted(erasure.message_ids for erasure in reading.entries)) == (
        True, [(SECRET_ID,), (1002,), (1003,)])


@pytest.mark.parametrize("fault", ["read-only ledger", "full disk"])
async def test_a_forget_the_ledger_cannot_record_is_not_done_and_says_why_on_either_store(
    core_profile: MemoryProfile, db_path: Path, store_url: str | None, embedder: object, fault: str,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = db_path.parent / LEDGER_NAME
    memory = await open_memory(core_profile, db_path, store_url)
    try:
        rowid = await remembered(memory)
        await forget_in_turn(memory, OTHER_IDS[0])
        before = ledger.read_bytes()
        if fault == "full disk":
            fill_the_disk(monkeypatch)
        else:
            make_read_only(ledger, monkeypatch)
        with pytest.raises(ErasureNotRecorded) as raised:
            await memory.forget_message(1, SECRET_ID)
        with pytest.raises(ErasureNotRecorded):
            await memory.set_opt_out(1, 100, True)
        held = await where_held(memory, rowid)
        opted_out = await memory.is_opted_out(1, 100)
        noted = len(await memory.store.erasures())
    finally:
        await memory.close()
    reason = "the disk is full" if fault == "full disk" else "permission denied"
    assert (raised.value.reason, ledger.read_bytes(), noted, opted_out) == (reason, before, 1, False)
    assert held == ["keyword search", "vector search", "messages", "keyword index", "embeddings"] + (
        ["FAISS index"] if store_url is None else [])


async def test_a_delete_on_discord_is_forgotten_on_a_full_disk_with_one_warning_and_recorded_later(
    core_profile: MemoryProfile, db_path: Path, store_url: str | None, embedder: object,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Deletes are not kept because the disk is full: the database forgets and notes them; the ledger writes them
    with its next append (here, a later forget), and copies the database's notes as memory next opens."""
    ledger = db_path.parent / LEDGER_NAME
    memory = await open_memory(core_profile, db_path, store_url)
    try:
        rowid = await remembered(memory)
        with monkeypatch.context() as full:
            fill_the_disk(full)
            with caplog.at_level(logging.WARNING):
                counts = [await memory.delete([SECRET_ID]), await memory.delete([OTHER_IDS[0]])]
            unrecorded = read_ledger(ledger).entries
        await memory.forget_message(1, OTHER_IDS[1])
        await memory.purge()
        held = await where_held(memory, rowid)
    finally:
        await memory.close()
    [warning] = [r.getMessage() for r in caplog.records
                 if r.levelno == logging.WARNING and r.name.startswith("cogs.memory.privacy")]
    assert warning.startswith(f"Could not record a delete on Discord in the erasure ledger {ledger} (the disk is "
                              "full): it is forgotten from the database all the same")
    assert (counts, unrecorded, held) == ([1, 1], (), [])
    assert [(e.kind, e.message_ids) for e in read_ledger(ledger).entries] == [
        ("deleted", (SECRET_ID,)), ("deleted", (OTHER_IDS[0],)), ("forget", (OTHER_IDS[1],))]


class Killed(Exception):
    """The process dying between the ledger's append and the database's write."""


@pytest.mark.parametrize("step", ["killed", "database write failed"])
async def test_a_forget_in_the_ledger_but_not_the_database_is_applied_as_memory_next_opens(
    core_profile: MemoryProfile, db_path: Path, store_url: str | None, embedder: object, step: str,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = await open_memory(core_profile, db_path, store_url)
    try:
        rowid = await remembered(memory)
        with monkeypatch.context() as dying:
            async def dies(message_ids: object) -> int:
                raise Killed() if step == "killed" else OSError(28, "database or disk is full")
            dying.setattr(memory.ingest, "delete", dies)
            with pytest.raises((Killed, OSError)):
                await memory.forget_message(1, SECRET_ID)
        still = await where_held(memory, rowid)
    finally:
        await memory.close()
    memory = await open_memory(core_profile, db_path, store_url)
    try:
        held = await where_held(memory, rowid)
        applied = memory.erasures.reapplied
    finally:
        await memory.close()
    assert (bool(still), held, applied) == (True, [], (1, 1))
    assert files_holding(db_path.parent) == []
