"""Guilds' and channels' names as last seen, on both stores: written in the background and read back after a restart,
renamed, forgotten with their channel or guild (threads with their parent), and forgotten again when a database from
before the forget comes back (the erasure ledger's re-apply). On PostgreSQL, shared by several processes, each reads
the names again: what another forgot or renamed reaches it, with no forget of its own undone by a read in flight."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from cogs.memory.dashboard.memory_source import MemorySource
from cogs.memory.ingest import names as place_names
from cogs.memory.memory import Memory
from cogs.memory.privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.protocol import Store
from cogs.memory.store.rows import PlaceName
from cogs.memory.store.sqlite.backup import backup_database, restore_database
from tests.fixtures.stores import query


def names_of(memory: Memory, guild_id: int) -> tuple[str | None, dict[int, str]]:
    return memory.names.guild_name(guild_id), memory.names.channel_names(guild_id)


def note_two_guilds(memory: Memory) -> None:
    memory.names.note_guild(1, "Harbour Club")
    memory.names.note_channel(1, 10, "general")
    memory.names.note_channel(1, 11, "boats")
    memory.names.note_channel(1, 110, "winter repairs", parent_id=11)
    memory.names.note_guild(2, "Chess Night")
    memory.names.note_channel(2, 20, "openings")


@dataclass(frozen=True, slots=True)
class Memories:
    """Memory on one store kind, opened as often as a test restarts it."""

    profile: MemoryProfile
    db_path: Path
    index_dir: Path
    store_url: str | None

    async def open(self) -> Memory:
        return await Memory.open(self.profile, self.db_path, self.index_dir, self.store_url)

    async def noted(self) -> Memory:
        """Memory opened with the names of two guilds noted and written."""
        memory = await self.open()
        note_two_guilds(memory)
        await memory.flush()
        return memory

    async def reopened(self, memory: Memory) -> Memory:
        await memory.close()
        return await self.open()


@pytest.fixture
def memories(core_profile: MemoryProfile, db_path: Path, index_dir: Path, store_url: str | None,
             embedder: object) -> Memories:
    return Memories(core_profile, db_path, index_dir, store_url)


async def test_names_noted_are_stored_and_read_back_after_a_restart(memories: Memories) -> None:
    memory = await memories.noted()
    memory = await memories.reopened(memory)
    try:
        assert names_of(memory, 1) == ("Harbour Club", {10: "general", 11: "boats", 110: "winter repairs"})
        assert memory.names.channel_parent(1, 110) == 11
        assert names_of(memory, 2) == ("Chess Night", {20: "openings"})
    finally:
        await memory.close()


async def test_a_rename_replaces_the_name_and_a_name_seen_again_writes_nothing(memories: Memories) -> None:
    memory = await memories.noted()
    [(seen_at,)] = await query(memory.store, "SELECT seen_at FROM place_names WHERE id = ? AND kind = 'channel'", 10)
    memory.names.note_channel(1, 10, "general")  # every message of the channel notes it: unchanged, not written
    memory.names.rename_channel(1, 11, "sailing")
    memory.names.rename_guild(1, "Harbour Sailing Club")
    memory.names.rename_channel(1, 12, "never captured")  # a rename alone records nothing
    await memory.flush()
    memory = await memories.reopened(memory)
    try:
        assert names_of(memory, 1) == ("Harbour Sailing Club", {10: "general", 11: "sailing", 110: "winter repairs"})
        assert await query(memory.store, "SELECT seen_at FROM place_names WHERE id = ? AND kind = 'channel'",
                           10) == [(seen_at,)]
    finally:
        await memory.close()


async def test_forgetting_a_channel_forgets_its_name_and_its_threads_and_a_guild_all_of_its_names(memories: Memories) -> None:
    memory = await memories.noted()
    await memory.forget_channel(1, 11)
    await memory.forget_guild(2)
    assert names_of(memory, 1) == ("Harbour Club", {10: "general"})
    assert names_of(memory, 2) == (None, {})
    memory = await memories.reopened(memory)
    try:
        assert names_of(memory, 1) == ("Harbour Club", {10: "general"})
        assert names_of(memory, 2) == (None, {})
        assert sorted(await query(memory.store, "SELECT name FROM place_names")) == [("Harbour Club",), ("general",)]
    finally:
        await memory.close()


async def test_a_name_noted_but_not_yet_written_when_its_channel_is_forgotten_is_never_written(memories: Memories) -> None:
    memory = await memories.open()
    try:
        async with memory.ingest.write_lock:  # the background write waits: the name is still only noted
            memory.names.note_channel(1, 11, "boats")
        await memory.forget_channel(1, 11)
        await memory.flush()
        assert await query(memory.store, "SELECT name FROM place_names") == []
    finally:
        await memory.close()


async def test_a_forgotten_channels_name_is_forgotten_again_when_a_database_from_before_comes_back(memories: Memories) -> None:
    """As a PostgreSQL dump restored from before the forget: the ledger file holds the forget, the database not."""
    memory = await memories.noted()
    await memory.close()
    await ErasureLedger(memories.db_path.parent / LEDGER_NAME).append(
        Erasure.new("forget", guild_id=1, channel_id=11, until=1e10), Erasure.new("forget", guild_id=2, until=1e10))
    memory = await memories.open()
    try:
        assert (names_of(memory, 1), names_of(memory, 2)) == (("Harbour Club", {10: "general"}), (None, {}))
        assert sorted(await query(memory.store, "SELECT name FROM place_names")) == [("Harbour Club",), ("general",)]
    finally:
        await memory.close()


def readable_in(data_dir: Path, text: str) -> list[str]:
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*")
                  if path.is_file() and text.encode() in path.read_bytes())


async def test_a_restored_sqlite_backup_loses_a_name_forgotten_after_it_in_every_file(
    core_profile: MemoryProfile, tmp_path: Path, embedder: object
) -> None:
    data_dir = tmp_path / "data"
    db_path, index_dir = data_dir / "memory.sqlite3", data_dir / "indexes"
    memory = await Memory.open(core_profile, db_path, index_dir)
    memory.names.note_guild(1, "Harbour Club")
    memory.names.note_channel(1, 11, "smugglers-cove")
    await memory.flush()
    backup = backup_database(db_path, tmp_path / "backup.sqlite3").path
    await memory.forget_channel(1, 11)
    await memory.close()
    restore_database(backup, db_path, index_dir)
    memory = await Memory.open(core_profile, db_path, index_dir)
    try:
        assert names_of(memory, 1) == ("Harbour Club", {})
    finally:
        await memory.close()
    assert readable_in(data_dir, "smugglers-cove") == []
    assert readable_in(data_dir, "Harbour Club")  # the grep would see what is there


async def test_a_name_the_database_refuses_now_fails_no_flush_and_is_written_later(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: object, caplog
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    try:
        with sqlite3.connect(db_path) as connection:
            connection.execute("CREATE TRIGGER refused BEFORE INSERT ON place_names "
                               "BEGIN SELECT RAISE(ABORT, 'database is locked'); END")
        memory.names.note_channel(1, 10, "general")
        await memory.flush()
        with sqlite3.connect(db_path) as connection:
            connection.execute("DROP TRIGGER refused")
        refused = await query(memory.store, "SELECT name FROM place_names")
        await memory.flush()
        assert (refused, await query(memory.store, "SELECT name FROM place_names")) == ([], [("general",)])
        assert "Could not store 1 guild or channel name(s) now" in caplog.text
    finally:
        await memory.close()


# -- several processes on one PostgreSQL database ----------------------------------------------------------------


@pytest.fixture
def processes(core_profile: MemoryProfile, tmp_path: Path, database_url: str,
              embedder: object) -> Callable[[str], Memories]:
    """Memory of one process among several sharing one PostgreSQL database, each with a data folder of its own."""
    def process(name: str) -> Memories:
        (tmp_path / name).mkdir(exist_ok=True)
        return Memories(core_profile, tmp_path / name / "memory.sqlite3", tmp_path / name / "indexes", database_url)
    return process


class HeldRead:
    """A store's ``place_names`` that reads its rows, then holds them until ``release``: a refresh in flight."""

    def __init__(self, store: Store) -> None:
        self._read = store.place_names
        self.read = asyncio.Event()
        self._released = asyncio.Event()

    async def __call__(self) -> list[PlaceName]:
        rows = await self._read()
        self.read.set()
        await self._released.wait()
        return rows

    def release(self) -> None:
        self._released.set()


async def test_memory_reads_the_names_again_on_postgresql_only(memories: Memories, store_url: str | None) -> None:
    """A SQLite file has one process: nothing else changes its names, so nothing reads them again."""
    memory = await memories.open()
    try:
        assert memory.names.refreshing is (store_url is not None)
    finally:
        await memory.close()
    assert memory.names.refreshing is False


async def test_a_channel_and_a_guild_another_process_forgets_lose_their_names_here_at_the_next_refresh(
    processes: Callable[[str], Memories]
) -> None:
    a = await processes("a").noted()
    b = await processes("b").open()
    try:
        assert names_of(b, 1) == ("Harbour Club", {10: "general", 11: "boats", 110: "winter repairs"})
        await a.forget_channel(1, 11)
        await a.forget_guild(2)
        await b.names.refresh()
        assert (names_of(b, 1), names_of(b, 2)) == (("Harbour Club", {10: "general"}), (None, {}))
        assert b.names.channel_parent(1, 110) is None
    finally:
        await a.close()
        await b.close()


async def test_a_rename_by_another_process_shows_here_at_the_next_refresh(processes: Callable[[str], Memories]) -> None:
    a = await processes("a").noted()
    b = await processes("b").open()
    try:
        a.names.rename_channel(1, 11, "sailing")
        a.names.rename_guild(1, "Harbour Sailing Club")
        await a.flush()
        await b.names.refresh()
        assert names_of(b, 1) == ("Harbour Sailing Club", {10: "general", 11: "sailing", 110: "winter repairs"})
    finally:
        await a.close()
        await b.close()


async def test_the_dashboard_of_a_process_stops_showing_a_channel_another_forgot_within_the_refresh_interval(
    processes: Callable[[str], Memories], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No refresh called: memory's own background one, its interval shortened so the test waits little."""
    monkeypatch.setattr(place_names, "REFRESH_INTERVAL_S", 0.05)
    a = await processes("a").noted()
    b = await processes("b").open()
    try:
        dashboard = MemorySource(lambda: b, profiles_dir=tmp_path / "profiles")
        assert (await dashboard.channel_names(1))[11] == "boats"
        await a.forget_channel(1, 11)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while 11 in await dashboard.channel_names(1) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert await dashboard.channel_names(1) == {10: "general"}
    finally:
        await a.close()
        await b.close()


async def test_a_name_noted_while_a_refresh_reads_is_kept(processes: Callable[[str], Memories],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    memory = await processes("b").noted()
    try:
        held = HeldRead(memory.store)
        monkeypatch.setattr(memory.store, "place_names", held)
        refresh = asyncio.create_task(memory.names.refresh())
        await held.read.wait()
        memory.names.note_channel(1, 12, "harbour-webcam")
        held.release()
        await refresh
        assert names_of(memory, 1)[1][12] == "harbour-webcam"
        await memory.flush()
        assert await query(memory.store, "SELECT name FROM place_names WHERE id = ?", 12) == [("harbour-webcam",)]
    finally:
        await memory.close()


async def test_a_forget_while_a_refresh_reads_is_not_undone_by_the_rows_it_read(
    processes: Callable[[str], Memories], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = await processes("b").noted()
    try:
        held = HeldRead(memory.store)
        monkeypatch.setattr(memory.store, "place_names", held)
        refresh = asyncio.create_task(memory.names.refresh())
        await held.read.wait()  # the rows read still hold #boats
        forget = asyncio.create_task(memory.names.forget(1, 11))
        await asyncio.sleep(0)  # the forget starts: it waits for the read, or (unguarded) forgets before it lands
        held.release()
        await asyncio.gather(refresh, forget)
        assert names_of(memory, 1) == ("Harbour Club", {10: "general"})
        monkeypatch.undo()
        await memory.names.refresh()
        assert names_of(memory, 1) == ("Harbour Club", {10: "general"})
    finally:
        await memory.close()


async def test_a_refresh_that_fails_keeps_the_names_and_warns_once(
    processes: Callable[[str], Memories], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A lost server is the store's to log (test_pg_faults.py); any other failure, names log once."""
    memory = await processes("b").noted()
    try:
        async def refused() -> list[PlaceName]:
            raise RuntimeError("the PostgreSQL server is not answering")

        monkeypatch.setattr(memory.store, "place_names", refused)
        with caplog.at_level(logging.INFO, logger=place_names.__name__):
            await memory.names.refresh()
            await memory.names.refresh()
            assert names_of(memory, 1) == ("Harbour Club", {10: "general", 11: "boats", 110: "winter repairs"})
            monkeypatch.undo()
            await memory.names.refresh()
        assert [(record.levelname, record.getMessage()) for record in caplog.records
                if record.name == place_names.__name__] == [
            ("WARNING", "Could not read guild and channel names again (RuntimeError: the PostgreSQL "
                        "server is not answering); the names read before are shown until the database answers"),
            ("INFO", "Guild and channel names read again")]
    finally:
        await memory.close()
