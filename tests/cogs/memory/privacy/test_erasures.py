"""Erasure survives restore: what was forgotten after a backup stays forgotten once that backup is restored (the
erasure ledger is applied again as memory opens): not stored, not found, tombstoned against catch-up and import,
and not readable in any file under the data directory. Last, the erasures object on fakes of the parts it needs."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cogs.memory.store.sqlite.backup import backup_database, restore_database
from cogs.memory.privacy.erasures import Erasures
from cogs.memory.privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.guild_policy import GuildSettings
from cogs.memory.store.history import Exclusion
from cogs.memory.store.rows import RowRef

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
# (message id, guild, channel, author, a word found nowhere else)
MESSAGES = [
    (1, 1, 10, 100, "zebracode"),
    (2, 1, 11, 200, "marmalade"),
    (3, 1, 10, 300, "quokkas"),
    (4, 2, 20, 400, "platypus"),
    (5, 1, 12, 100, "lanterns"),
]
KEPT_WORD = "quokkas"


def record(message_id: int, guild_id: int, channel_id: int, author_id: int, word: str) -> MessageRecord:
    return MessageRecord(message_id=message_id, guild_id=guild_id, channel_id=channel_id, parent_channel_id=None,
                         author_id=author_id, author_name=f"user{author_id}",
                         content=f"remember the {word} from the harbour meeting",
                         created_at=T0 + timedelta(minutes=message_id))


async def opt_out(memory: Memory) -> None:
    await memory.set_opt_out(1, 100, True)
    await memory.forget_author(1, 100)


async def forget_message(memory: Memory) -> None:
    await memory.forget_message(1, 1)


async def forget_member(memory: Memory) -> None:
    await memory.forget_author(1, 100)


async def forget_channel(memory: Memory) -> None:
    await memory.forget_channel(1, 11)


async def remove_guild(memory: Memory) -> None:
    await memory.forget_guild(2)


async def deleted_on_discord(memory: Memory) -> None:
    await memory.delete([1])


# (what happens after the backup, the message ids it forgets)
CASES: list[tuple[str, Callable[[Memory], Awaitable[None]], set[int]]] = [
    ("message forgotten", forget_message, {1}),
    ("message deleted on Discord", deleted_on_discord, {1}),
    ("opt-out", opt_out, {1, 5}),
    ("member forgotten", forget_member, {1, 5}),
    ("channel forgotten", forget_channel, {2}),
    ("guild removed", remove_guild, {4}),
]


def readable_in(data_dir: Path, word: str) -> list[str]:
    needle = word.encode()
    return sorted(str(path.relative_to(data_dir)) for path in data_dir.rglob("*")
                  if path.is_file() and needle in path.read_bytes())


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


async def open_memory(profile: MemoryProfile, data_dir: Path) -> Memory:
    return await Memory.open(profile, data_dir / "memory.sqlite3", data_dir / "indexes")


async def restored_after(erase: Callable[[Memory], Awaitable[None]], messages: Sequence[tuple[int, int, int, int, str]],
                         profile: MemoryProfile, data_dir: Path, tmp_path: Path) -> Memory:
    """Memory opened again after ``messages`` were stored, a backup taken, ``erase`` done and the backup restored."""
    memory = await open_memory(profile, data_dir)
    for message in messages:
        await memory.add(record(*message))
    await memory.flush()
    backup = backup_database(data_dir / "memory.sqlite3", tmp_path / "backup.sqlite3").path
    await erase(memory)
    await memory.close()
    restore_database(backup, data_dir / "memory.sqlite3", data_dir / "indexes")
    return await open_memory(profile, data_dir)


async def found(memory: Memory, word: str) -> list[int]:
    hits = []
    for guild_id in (1, 2):
        hits += [hit.message_id for hit in await memory.search(word, SearchFilters(guild_id=guild_id), 10)]
    return hits


@pytest.mark.parametrize(("erase", "forgotten"), [(erase, forgotten) for _, erase, forgotten in CASES],
                         ids=[name for name, _, _ in CASES])
async def test_what_was_forgotten_after_a_backup_stays_forgotten_when_it_is_restored(
    core_profile: MemoryProfile, data_dir: Path, tmp_path: Path, embedder: object,
    erase: Callable[[Memory], Awaitable[None]], forgotten: set[int]
) -> None:
    memory = await restored_after(erase, MESSAGES, core_profile, data_dir, tmp_path)
    try:
        ids = [message[0] for message in MESSAGES]
        stored, deleted = await memory.known_message_ids(ids)
        words = {message[0]: message[4] for message in MESSAGES}
        hits = {message_id: await found(memory, words[message_id]) for message_id in ids}
        # What catch-up or an import would bring again: refused.
        for message in MESSAGES:
            await memory.add(record(*message))
        await memory.flush()
        stored_again, _ = await memory.known_message_ids(ids)
    finally:
        await memory.close()
    assert stored == stored_again == set(ids) - forgotten
    assert {message_id for message_id, ids_found in hits.items() if message_id in ids_found} == set(ids) - forgotten
    if forgotten == {1} or forgotten == {2}:  # one message or a channel by id: tombstoned against later copies
        assert forgotten <= deleted
    assert {word: readable_in(data_dir, word) for message_id, word in words.items() if message_id in forgotten} == {
        words[message_id]: [] for message_id in forgotten}
    assert readable_in(data_dir, KEPT_WORD)  # the grep would see what is there


async def test_an_opt_out_after_the_backup_stays_in_force_after_the_restore(
    core_profile: MemoryProfile, data_dir: Path, tmp_path: Path, embedder: object
) -> None:
    memory = await restored_after(opt_out, MESSAGES[:1], core_profile, data_dir, tmp_path)
    try:
        opted_out = await memory.is_opted_out(1, 100)
        later = MessageRecord(message_id=9, guild_id=1, channel_id=10, parent_channel_id=None, author_id=100,
                              author_name="user100", content="said after the restore", created_at=datetime.now(UTC))
        await memory.add(later)
        await memory.flush()
        stored, _ = await memory.known_message_ids([1, 9])
    finally:
        await memory.close()
    assert (opted_out, stored) == (True, set())


async def test_a_capture_switched_off_after_the_backup_stays_off_after_the_restore(
    core_profile: MemoryProfile, data_dir: Path, tmp_path: Path, embedder: object
) -> None:
    memory = await open_memory(core_profile, data_dir)
    await memory.add(record(*MESSAGES[0]))
    await memory.flush()
    backup = backup_database(data_dir / "memory.sqlite3", tmp_path / "backup.sqlite3").path
    settings = await memory.settings(1)
    await memory.save_settings(1, settings.with_changes(capture_disabled_channel_ids=frozenset({10})))
    await memory.close()
    restore_database(backup, data_dir / "memory.sqlite3", data_dir / "indexes")
    memory = await open_memory(core_profile, data_dir)
    try:
        disabled = (await memory.settings(1)).capture_disabled_channel_ids
    finally:
        await memory.close()
    assert disabled == {10}


async def test_a_start_with_nothing_to_apply_again_applies_nothing(
    core_profile: MemoryProfile, data_dir: Path, embedder: object
) -> None:
    memory = await open_memory(core_profile, data_dir)
    try:
        await memory.add(record(*MESSAGES[0]))
        await memory.forget_message(1, 1)
        await memory.forget_channel(1, 11)
        assert await memory.erasures.reapply() == 0
    finally:
        await memory.close()
    assert len((data_dir / LEDGER_NAME).read_text().splitlines()) == 2


async def test_a_line_cut_short_is_skipped_with_one_warning_and_the_next_entry_starts_a_new_line(
    core_profile: MemoryProfile, data_dir: Path, embedder: object, caplog: pytest.LogCaptureFixture
) -> None:
    memory = await open_memory(core_profile, data_dir)
    for message in MESSAGES[:2]:
        await memory.add(record(*message))
    await memory.flush()
    await memory.close()
    ledger = data_dir / LEDGER_NAME
    whole = Erasure.new("forget", guild_id=1, message_ids=(1,))
    ledger.write_text(whole.to_json() + "\n" + Erasure.new("forget", guild_id=1, message_ids=(2,)).to_json()[:30])
    with caplog.at_level(logging.WARNING):
        memory = await open_memory(core_profile, data_dir)
    try:
        stored, _ = await memory.known_message_ids([1, 2])
        await memory.forget_message(1, 2)
    finally:
        await memory.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "ledger" in r.getMessage()]
    assert (stored, len(warnings)) == ({2}, 1)
    assert [erasure.message_ids for erasure in await ErasureLedger(ledger).read()] == [(1,), (2,)]


async def test_an_erasure_the_database_lacks_is_applied_as_memory_opens_on_either_store(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, store_url: str | None, embedder: object
) -> None:
    """A PostgreSQL dump restored from before an erasure: the ledger file holds it, the database does not."""
    memory = await Memory.open(core_profile, db_path, index_dir, store_url)
    try:
        for message in MESSAGES:
            await memory.add(record(*message))
        await memory.flush()
    finally:
        await memory.close()
    ledger = ErasureLedger(db_path.parent / LEDGER_NAME)
    await ledger.append(Erasure.new("forget", guild_id=1, message_ids=(1,)),
                        Erasure.new("forget", guild_id=1, channel_id=11, until=(T0 + timedelta(hours=1)).timestamp()),
                        Erasure.new("opt_out", guild_id=2, author_id=400))
    memory = await Memory.open(core_profile, db_path, index_dir, store_url)
    try:
        stored, deleted = await memory.known_message_ids([1, 2, 3, 4, 5])
        opted_out = await memory.is_opted_out(2, 400)
        hits = set(await found(memory, "zebracode marmalade platypus")) & {1, 2, 4}
    finally:
        await memory.close()
    assert (stored, {1, 2} <= deleted, opted_out, hits) == ({3, 5}, True, True, set())


async def test_the_database_a_restore_sets_aside_holds_nothing_a_crash_left_unpurged(
    tmp_path: Path, make_record: Callable[..., MessageRecord]
) -> None:
    """Forgotten, then killed before the purge: the WAL still holds the text; the copy restore keeps must not."""
    import shutil

    from cogs.memory.store.sqlite.store import SqliteStore
    from cogs.memory.store.rows import NewRow, WriteBatch

    live, crashed = tmp_path / "live", tmp_path / "data"
    live.mkdir()
    crashed.mkdir()
    store = await SqliteStore.open(live / "memory.sqlite3")
    try:
        kept, secret = make_record(1, "kept note"), make_record(2, "the zebracode is forgotten")
        rowids = list(store.allocate_rowids(2))
        await store.write(WriteBatch("m", guild_ids={1}, inserts=[
            NewRow(rowid, rec, rec.content, rec.content) for rowid, rec in zip(rowids, [kept, secret], strict=True)]))
        backup = backup_database(live / "memory.sqlite3", tmp_path / "backup.sqlite3").path
        await store.write(WriteBatch("m", guild_ids={1}, deletes=[rowids[1]], tombstones=[2], deleted_at=1.0))
        for path in live.iterdir():  # the files as a kill -9 leaves them: no purge, no checkpoint
            shutil.copy(path, crashed / path.name)
    finally:
        await store.close()
    assert readable_in(crashed, "zebracode")  # what the restore must not keep
    done = restore_database(backup, crashed / "memory.sqlite3", crashed / "indexes")
    assert done.replaced is not None  # kept outside the data folder, in backups/ beside it
    assert (readable_in(crashed, "zebracode"), readable_in(done.replaced.parent, "zebracode")) == (
        ["memory.sqlite3"], [])


async def test_what_another_process_erased_in_postgresql_goes_into_this_processs_ledger_too(
    core_profile: MemoryProfile, tmp_path: Path, database_url: str, embedder: object
) -> None:
    """Two bots on one PostgreSQL, each with its data folder: a dump restored later cannot undo what either erased,
    whichever one's ledger file survives."""
    first, second = tmp_path / "first", tmp_path / "second"
    memory = await Memory.open(core_profile, first / "memory.sqlite3", first / "indexes", database_url)
    try:
        await memory.add(record(*MESSAGES[0]))
        await memory.forget_message(1, 1)
    finally:
        await memory.close()
    memory = await Memory.open(core_profile, second / "memory.sqlite3", second / "indexes", database_url)
    try:
        applied_again = memory.erasures.reapplied
    finally:
        await memory.close()
    copied = await ErasureLedger(second / LEDGER_NAME).read()
    assert (applied_again, [erasure.message_ids for erasure in copied]) == ((0, 0), [(1,)])


# -- the erasures object on fakes of its narrow parts (privacy/erasures.py's Protocols) -------------------------


class FakeStore:
    """Stored messages by channel (guild 1), and the database's notes of erasures applied."""

    def __init__(self, refs: list[RowRef]) -> None:
        self.refs = refs
        self.notes: dict[str, str] = {}

    async def refs_for_author(self, guild_id: int | None, author_id: int) -> list[RowRef]:
        return []

    async def refs_for_channel(self, guild_id: int, channel_id: int) -> list[RowRef]:
        return [ref for ref in self.refs if ref.channel_id == channel_id]

    async def refs_for_guild(self, guild_id: int) -> list[RowRef]:
        return list(self.refs)

    async def erasures(self) -> dict[str, str]:
        return dict(self.notes)

    async def record_erasure(self, erasure_id: str, at: float, entry: str) -> None:
        self.notes[erasure_id] = entry


class FakeIngest:
    """Forgets from ``store``, and notes what the ledger file and the database's notes held at each call."""

    def __init__(self, store: FakeStore, ledger: ErasureLedger) -> None:
        self.write_lock = asyncio.Lock()
        self.store, self.ledger = store, ledger
        self.calls: list[tuple[str, int, int]] = []  # (call, ledger entries then, database notes then)

    async def _called(self, name: str) -> None:
        self.calls.append((name, len(await self.ledger.read()), len(self.store.notes)))

    async def delete(self, message_ids: Sequence[int]) -> int:
        await self._called("delete")
        return 0

    async def delete_channel(self, guild_id: int, channel_id: int) -> int:
        await self._called("delete_channel")
        return await self.erase(lambda: self.store.refs_for_channel(guild_id, channel_id))

    async def delete_guild(self, guild_id: int) -> int:
        await self._called("delete_guild")
        return 0

    async def delete_author(self, guild_id: int | None, author_id: int, channel_id: int | None = None) -> int:
        await self._called("delete_author")
        return 0

    async def erase(self, select: Callable[[], Awaitable[list[RowRef]]]) -> int:
        async with self.write_lock:
            refs = await select()
        self.store.refs = [ref for ref in self.store.refs if ref not in refs]
        return len(refs)


class FakeHistory:
    def __init__(self) -> None:
        self.exclusions: list[Exclusion] = []
        self.forgotten: list[tuple[int, int | None]] = []

    async def exclude(self, exclusion: Exclusion) -> None:
        self.exclusions.append(exclusion)

    async def end_exclusions(self, guild_id: int, channel_id: int, until: float) -> None:
        self.exclusions = [e for e in self.exclusions if e.channel_id != channel_id]

    async def forget(self, guild_id: int, channel_id: int | None = None) -> None:
        self.forgotten.append((guild_id, channel_id))


class FakeNames:
    async def forget(self, guild_id: int, channel_id: int | None = None) -> int:
        return 0


class FakePurges:
    def __init__(self) -> None:
        self.asked = 0

    def soon(self) -> None:
        self.asked += 1

    async def now(self) -> bool:
        self.asked += 1
        return True


class FakePolicy:
    def __init__(self) -> None:
        self.saved: dict[int, GuildSettings] = {}
        self.opted_out: set[tuple[int, int]] = set()

    async def settings(self, guild_id: int) -> GuildSettings:
        return self.saved.get(guild_id, GuildSettings())

    async def save_settings(self, guild_id: int, settings: GuildSettings) -> None:
        self.saved[guild_id] = settings

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        (self.opted_out.add if opted_out else self.opted_out.discard)((guild_id, user_id))

    def forget_guild(self, guild_id: int) -> None:
        self.saved.pop(guild_id, None)


# Channel 11 of guild 1: two messages said before a forget at ``FORGOT_AT``, one after it.
FORGOT_AT = 1_000.0
CHANNEL_REFS = [RowRef(1, 1, 1, 11, 900.0), RowRef(2, 2, 1, 11, 950.0), RowRef(3, 3, 1, 11, 1_100.0)]


def erasures_on_fakes(tmp_path: Path) -> tuple[Erasures, FakeStore, FakeIngest, FakeHistory, FakePolicy]:
    ledger, store, history, policy = ErasureLedger(tmp_path / LEDGER_NAME), FakeStore(CHANNEL_REFS), FakeHistory(), \
        FakePolicy()
    ingest = FakeIngest(store, ledger)
    return Erasures(ledger, store, ingest, history, FakeNames(), FakePurges(), policy), store, ingest, history, policy


async def test_a_forget_is_in_the_ledger_file_before_anything_is_forgotten_and_noted_in_the_database_after(
    tmp_path: Path
) -> None:
    erasures, store, ingest, history, _ = erasures_on_fakes(tmp_path)
    forgotten = await erasures.forget_channel(1, 11)
    [entry] = await ErasureLedger(tmp_path / LEDGER_NAME).read()
    assert (forgotten, ingest.calls, list(store.notes), store.refs) == (3, [("delete_channel", 1, 0)], [entry.id], [])
    assert (entry.kind, entry.channel_id, history.forgotten) == ("forget", 11, [(1, 11)])


async def test_a_forget_the_database_lacks_is_applied_again_to_what_was_said_before_it_and_noted(
    tmp_path: Path
) -> None:
    erasures, store, _, history, _ = erasures_on_fakes(tmp_path)
    await ErasureLedger(tmp_path / LEDGER_NAME).append(
        Erasure.new("forget", guild_id=1, channel_id=11, until=FORGOT_AT))
    applied = await erasures.reapply()
    again = await erasures.reapply()
    assert (applied, erasures.reapplied, again, store.refs) == (1, (1, 2), 0, CHANNEL_REFS[2:])
    assert (len(store.notes), history.exclusions) == (1, [Exclusion(1, 11, until=FORGOT_AT)])


async def test_a_capture_switched_off_is_switched_off_again_and_erases_only_what_was_said_since(
    tmp_path: Path
) -> None:
    erasures, store, _, history, policy = erasures_on_fakes(tmp_path)
    switch = Erasure("capture_off", guild_id=1, channel_id=11, at=FORGOT_AT, id="switched-off")
    await ErasureLedger(tmp_path / LEDGER_NAME).append(switch)
    assert await erasures.reapply() == 1
    assert (await policy.settings(1)).capture_disabled_channel_ids == {11}
    assert (store.refs, history.exclusions) == (CHANNEL_REFS[:2], [Exclusion(1, 11, since=FORGOT_AT)])
