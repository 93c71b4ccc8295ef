"""The history ledger on both stores (a real SQLite file, a real PostgreSQL): the stored spans catch-up and backfill
compare with Discord, and their saved progress, which survives a restart and goes when its channel is forgotten."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg
import pytest

from cogs.memory.store.sqlite import migrations
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.store.history import BackfillProgress, CatchUpProgress, Exclusion, HistoryLedger
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.store.postgres import schema
from cogs.memory.store.postgres.indexes import DatabaseIndexes
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.store.rows import from_timestamp
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.fixtures.core import T0, RecordFactory
from tests.fixtures.postgres import fresh_database
from tests.fixtures.stores import backend_for, insert


@dataclass
class Backend:
    ledger: HistoryLedger
    ingest: IngestQueue
    # A second ledger over a store opened anew on the same database: what a restarted process reads.
    reopened: Callable[[], Awaitable[HistoryLedger]]
    store: Any = None  # the store itself, for rows written as an older version wrote them


@pytest.fixture(params=["sqlite", "postgresql"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path, embedder: EmbeddingService
                  ) -> AsyncIterator[Backend]:
    opened: list[Any] = []

    async def open_store() -> Any:
        if request.param == "sqlite":
            store: Any = await SqliteStore.open(tmp_path / "memory.sqlite3")
        else:
            store = await PostgresStore.open(url)
        opened.append(store)
        return store

    async def reopened() -> HistoryLedger:
        return backend_for(await open_store()).history(asyncio.Lock())

    url = await fresh_database(request.getfixturevalue("postgres_server_url")) if request.param != "sqlite" else ""
    store = await open_store()
    if request.param == "sqlite":
        indexes: Any = IndexRegistry(store, tmp_path / "indexes", embedder.model_name, embedder.dimension)
        await indexes.load_all()
    else:
        indexes = DatabaseIndexes(store, embedder.model_name, embedder.dimension)
    ingest = IngestQueue(store, embedder, indexes, batch_size=8, queue_size=64)
    ingest.start()
    yield Backend(backend_for(store).history(ingest.write_lock), ingest, reopened, store)
    await ingest.close()
    await indexes.close()
    for each in reversed(opened):
        await each.close()


@pytest.fixture
def ledger(backend: Backend) -> HistoryLedger:
    return backend.ledger


@pytest.fixture
def ingest(backend: Backend) -> IngestQueue:
    return backend.ingest


@pytest.fixture
async def channel_messages(backend: Backend, ingest: IngestQueue, make_record: RecordFactory) -> None:
    """Messages 1-4 in channel 10 at minutes 1-4, message 5 in channel 11 at minute 5, message 6 in guild 2's channel
    10 (written straight to the store, as an older version stored it: ingest now refuses a channel two guilds claim)."""
    for message_id in range(1, 5):
        await ingest.add(make_record(message_id, f"message {message_id}"))
    await ingest.add(make_record(5, "message 5", channel_id=11))
    await ingest.flush(vectors=True)
    await insert(backend.store, make_record(6, "message 6", guild_id=2))


# -- stored spans ---------------------------------------------------------------------------------------------------


async def test_recent_messages_are_the_newest_before_a_time_newest_first(ledger: HistoryLedger,
                                                                         channel_messages: None) -> None:
    recent = await ledger.recent_messages(1, 10, T0 + timedelta(minutes=3, seconds=30), 2)
    assert [(m.message_id, m.content) for m in recent] == [(3, "message 3"), (2, "message 2")]


async def test_a_page_ending_among_messages_of_one_timestamp_goes_on_with_the_rest(
        ledger: HistoryLedger, ingest: IngestQueue, make_record: RecordFactory) -> None:
    # Five messages of the same second (a bot's burst, an import); pages of two, each after the (time, id) it ended on.
    same = T0 + timedelta(minutes=7)
    for message_id in range(11, 16):
        await ingest.add(replace(make_record(message_id, f"burst {message_id}"), created_at=same))
    await ingest.add(make_record(9, "before the burst", minute=5))
    await ingest.flush(vectors=True)
    pages, before, before_id = [], T0 + timedelta(hours=1), None
    while True:
        page = await ledger.recent_messages(1, 10, before, 2, before_id)
        if not page:
            break
        pages.append([m.message_id for m in page])
        before, before_id = from_timestamp(page[-1].created_at), page[-1].message_id
    assert pages == [[15, 14], [13, 12], [11, 9]]


async def test_messages_between_include_both_ends(ledger: HistoryLedger, channel_messages: None) -> None:
    between = await ledger.messages_between(1, 10, T0 + timedelta(minutes=2), T0 + timedelta(minutes=4))
    assert [m.message_id for m in between] == [2, 3, 4]


async def test_an_edit_is_seen_with_its_time(ledger: HistoryLedger, ingest: IngestQueue,
                                             channel_messages: None) -> None:
    await ingest.edit(2, "message 2, edited", T0 + timedelta(hours=1))
    (edited,) = await ledger.messages_between(1, 10, T0 + timedelta(minutes=2), T0 + timedelta(minutes=2))
    assert (edited.content, edited.edited_at) == ("message 2, edited", (T0 + timedelta(hours=1)).timestamp())


async def test_the_guilds_newest_message_before_a_time(ledger: HistoryLedger, channel_messages: None) -> None:
    assert (await ledger.newest_message_id(1, T0 + timedelta(minutes=4, seconds=30)),
            await ledger.newest_message_id(1, T0)) == (4, None)


async def test_the_channels_newest_message(ledger: HistoryLedger, channel_messages: None) -> None:
    assert (await ledger.newest_in_channel(1, 10), await ledger.newest_in_channel(1, 12)) == (4, None)


# -- progress -------------------------------------------------------------------------------------------------------


async def test_catch_up_progress_is_read_back_after_a_restart(backend: Backend) -> None:
    progress = CatchUpProgress(10, 1, None, position=40, anchor=30, read=5, added=2, edited=1, deleted=1)
    await backend.ledger.save_catchup(progress)
    assert await (await backend.reopened()).catchup_progress(10) == progress


async def test_a_finished_catch_up_is_read_back_finished(ledger: HistoryLedger) -> None:
    progress = CatchUpProgress(10, 1, 9, position=40, anchor=40, finished=True)
    await ledger.save_catchup(progress)
    assert await ledger.catchup_progress(10) == progress


async def test_backfill_progress_is_read_back(ledger: HistoryLedger) -> None:
    progress = BackfillProgress(10, 1, None, oldest_id=3, newest_id=9, reached_start=True)
    await ledger.save_backfill(progress)
    assert await ledger.backfill_progress(10) == progress


async def test_forgetting_a_channel_drops_its_and_its_threads_progress_only(ledger: HistoryLedger) -> None:
    for channel_id, parent in ((10, None), (20, 10), (11, None)):
        await ledger.save_catchup(CatchUpProgress(channel_id, 1, parent, position=5, anchor=5))
        await ledger.save_backfill(BackfillProgress(channel_id, 1, parent, oldest_id=1, newest_id=5))
    await ledger.forget(1, 10)
    kept = [channel_id for channel_id in (10, 20, 11) if await ledger.catchup_progress(channel_id)]
    kept_backfills = [channel_id for channel_id in (10, 20, 11) if await ledger.backfill_progress(channel_id)]
    assert (kept, kept_backfills) == ([11], [11])


async def test_forgetting_a_guild_drops_its_progress(ledger: HistoryLedger) -> None:
    await ledger.save_backfill(BackfillProgress(10, 1, None, oldest_id=1, newest_id=5))
    await ledger.save_backfill(BackfillProgress(30, 2, None, oldest_id=1, newest_id=5))
    await ledger.forget(1)
    assert (await ledger.backfill_progress(10), await ledger.backfill_progress(30) is not None) == (None, True)


# -- what history must not bring back ------------------------------------------------------------------------------


async def test_a_channels_exclusions_are_its_own_its_parents_and_the_guilds(ledger: HistoryLedger) -> None:
    wanted = [Exclusion(1, 10, until=5.0), Exclusion(1, 20, author_id=7, until=6.0), Exclusion(1, author_id=8),
              Exclusion(None, author_id=9, until=7.0), Exclusion(1, message_id=99)]
    for exclusion in [*wanted, Exclusion(1, 11, until=5.0), Exclusion(2, author_id=8, until=5.0)]:
        await ledger.exclude(exclusion)
    assert sorted(await ledger.exclusions(1, 20, 10), key=repr) == sorted(wanted, key=repr)


async def test_capture_on_again_ends_the_channels_open_exclusion(ledger: HistoryLedger) -> None:
    await ledger.exclude(Exclusion(1, 10, since=100.0))
    await ledger.end_exclusions(1, 10, 200.0)
    assert await ledger.exclusions(1, 10, None) == [Exclusion(1, 10, since=100.0, until=200.0)]


async def test_a_later_forget_of_the_same_thing_replaces_the_earlier(ledger: HistoryLedger) -> None:
    await ledger.exclude(Exclusion(1, 10, until=100.0))
    await ledger.exclude(Exclusion(1, 10, until=200.0))
    assert await ledger.exclusions(1, 10, None) == [Exclusion(1, 10, until=200.0)]


@pytest.mark.parametrize(("exclusion", "covered"), [
    (Exclusion(1, 10, until=100.0), [True, True, False, False]),
    (Exclusion(1, 10, since=50.0), [False, True, True, False]),
    (Exclusion(1, author_id=7, until=100.0), [True, True, False, True]),
    (Exclusion(1, message_id=2), [False, True, False, False]),
])
def test_an_exclusion_covers_its_span_of_a_channel_its_threads_an_author_or_one_message(
        exclusion: Exclusion, covered: list[bool]) -> None:
    # (channel, parent, author, message id, created at): in channel 10 at 10 s, in its thread at 60 s, in channel 10
    # at 150 s, in channel 11 at 20 s
    messages = [(10, None, 7, 1, 10.0), (20, 10, 7, 2, 60.0), (10, None, 8, 3, 150.0), (11, None, 7, 4, 20.0)]
    assert [exclusion.covers(*message) for message in messages] == covered


# -- the migration from the settings ---------------------------------------------------------------------------------

MigratedFrom = Callable[[dict[str, Any]], Awaitable[HistoryLedger]]


async def _sqlite_before_history(path: Path, settings: str, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        monkeypatch.setattr(migrations, "MIGRATIONS", tuple(m for m in migrations.MIGRATIONS if m.name < "0008"))
        await migrations.apply_migrations(conn)
        await conn.execute("INSERT INTO guild_settings (guild_id, settings) VALUES (1, ?)", (settings,))
    finally:
        await conn.close()


async def _postgresql_before_history(url: str, settings: str, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = await asyncpg.connect(url)
    try:
        monkeypatch.setattr(schema, "MIGRATIONS", tuple(m for m in schema.MIGRATIONS if m.name < "0003"))
        await schema.apply_migrations(conn)
        await conn.execute("INSERT INTO guild_settings (guild_id, settings) VALUES (1, $1::jsonb)", settings)
    finally:
        await conn.close()


@pytest.fixture(params=["sqlite", "postgresql"])
async def migrated_from(request: pytest.FixtureRequest, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[MigratedFrom]:
    """Opens the ledger of a database whose guild 1 had ``settings`` from before the history ledger existed."""
    opened: list[Any] = []

    async def migrated(settings: dict[str, Any]) -> HistoryLedger:
        if request.param == "sqlite":
            await _sqlite_before_history(tmp_path / "memory.sqlite3", json.dumps(settings), monkeypatch)
            monkeypatch.undo()
            store: Any = await SqliteStore.open(tmp_path / "memory.sqlite3")
        else:
            url = await fresh_database(request.getfixturevalue("postgres_server_url"))
            await _postgresql_before_history(url, json.dumps(settings), monkeypatch)
            monkeypatch.undo()
            store = await PostgresStore.open(url)
        opened.append(store)
        return backend_for(store).history(asyncio.Lock())

    yield migrated
    for store in opened:
        await store.close()


async def test_a_backfills_old_place_becomes_its_progress(migrated_from: MigratedFrom) -> None:
    ledger = await migrated_from({"auto_recall": True, "backfill_progress": {"10": 99}})
    assert await ledger.backfill_progress(10) == BackfillProgress(10, 1, None, oldest_id=99, newest_id=99,
                                                                  reached_start=False)


async def test_a_channel_whose_capture_is_off_is_excluded_from_the_start(migrated_from: MigratedFrom) -> None:
    ledger = await migrated_from({"capture_disabled_channel_ids": [10]})
    assert (await ledger.exclusions(1, 10, None), await ledger.exclusions(1, 11, None)) == ([Exclusion(1, 10)], [])
