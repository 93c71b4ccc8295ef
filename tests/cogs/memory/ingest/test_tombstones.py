"""Deletes and edits that race ahead of their add, with the real MiniLM, a real SQLite file and real FAISS: a deleted
message is never stored afterwards, and an edited one is stored as edited."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.records import MessageRecord
from cogs.memory.store.sqlite.store import SqliteStore, WriteBatch
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import consistent_ids, contents
from tests.fixtures.core import RecordFactory, fetchall
from tests.fixtures.waiting import eventually

DAY_S = 86_400


def created_now(record: MessageRecord) -> MessageRecord:
    """The record as if posted a minute from now: after anything forgotten so far."""
    return dataclasses.replace(record, created_at=datetime.now(UTC) + timedelta(minutes=1))


async def tombstones(store: SqliteStore) -> list[int]:
    return [row[0] for row in await fetchall(store, "SELECT message_id FROM message_tombstones")]


# -- deletes before adds ---------------------------------------------------------------------------------------


async def test_a_delete_before_the_add_drops_the_add(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    assert await ingest.delete([1]) == 0
    await ingest.add(make_record(1, "deleted by automod at once"))
    await ingest.flush(vectors=True)
    assert await consistent_ids(store, indexes) == []


async def test_a_delete_before_the_add_leaves_only_the_id_behind(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete([1])
    await ingest.add(make_record(1, "deleted by automod at once"))
    await ingest.flush(vectors=True)
    assert await tombstones(store) == [1]


class GatedEmbedder:
    """The real model behind a gate: a batch stays in flight until the test opens it."""

    def __init__(self, inner: EmbeddingService) -> None:
        self._inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.in_flight = asyncio.Event()
        self.gate = asyncio.Event()

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.in_flight.set()
        await self.gate.wait()
        return await self._inner.embed(texts)


async def test_an_add_arriving_while_the_delete_waits_for_a_batch_in_flight_is_dropped(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = IngestQueue(store, gated, indexes, batch_size=8, queue_size=64)
    queue.start()
    await queue.add(make_record(1, "an earlier message, embedding"))
    await gated.in_flight.wait()
    delete = asyncio.create_task(queue.delete([2]))
    await eventually(lambda: queue._tombstones.holds_message(2), what="the delete has begun")  # it waits meanwhile
    await queue.add(make_record(2, "posted and deleted at once"))
    gated.gate.set()
    assert await delete == 0
    await queue.close()
    assert await contents(store) == ["an earlier message, embedding"]


async def test_a_message_in_a_batch_in_flight_when_deleted_is_not_stored(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    gated = GatedEmbedder(embedder)
    queue = IngestQueue(store, gated, indexes, batch_size=8, queue_size=64)
    queue.start()
    await queue.add(make_record(1, "posted by mistake"))
    await gated.in_flight.wait()
    delete = asyncio.create_task(queue.delete([1]))
    await eventually(lambda: queue._tombstones.holds_message(1), what="the delete has begun")
    gated.gate.set()
    assert await delete == 1
    await queue.close()
    assert await consistent_ids(store, indexes) == []


async def test_a_bulk_delete_drops_every_add_still_to_come(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "stored before the purge"))
    await ingest.flush(vectors=True)
    assert await ingest.delete([1, 2, 3]) == 1
    for message_id in (2, 3):
        await ingest.add(make_record(message_id, f"spam {message_id}"))
    await ingest.add(make_record(4, "after the purge"))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["after the purge"]


async def test_a_deleted_then_re_added_stored_message_is_not_stored_again(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "said, then deleted on Discord"))
    await ingest.flush(vectors=True)
    await ingest.delete([1])
    await ingest.add(make_record(1, "said, then deleted on Discord"))  # an export from before the delete
    await ingest.flush(vectors=True)
    assert await contents(store) == []


# -- channels, guilds and authors -----------------------------------------------------------------------------


async def test_a_late_add_into_a_deleted_channel_is_dropped(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_channel(1, 10)
    await ingest.add(make_record(1, "in the deleted channel"))
    await ingest.add(make_record(2, "in another channel", channel_id=11))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["in another channel"]


async def test_a_late_add_into_a_thread_of_a_deleted_channel_is_dropped(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_channel(1, 10)
    await ingest.add(make_record(1, "in its thread", channel_id=50, parent_channel_id=10))
    await ingest.flush(vectors=True)
    assert await contents(store) == []


async def test_a_channel_forgotten_by_command_remembers_what_is_said_after(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_channel(1, 10)
    await ingest.add(created_now(make_record(1, "a fresh start")))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["a fresh start"]


async def test_a_late_add_into_a_left_guild_is_dropped(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_guild(1)
    await ingest.add(make_record(1, "said before the bot left"))
    await ingest.add(make_record(2, "in another guild", guild_id=2, channel_id=20))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["in another guild"]


async def test_a_rejoined_guild_is_remembered_again(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_guild(1)
    await ingest.add(created_now(make_record(1, "said after the bot came back")))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["said after the bot came back"]


async def test_a_late_add_by_a_forgotten_author_is_dropped(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_author(1, 100)
    await ingest.add(make_record(1, "said before opting out"))
    await ingest.add(make_record(2, "someone else", author_id=200))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["someone else"]


async def test_a_late_add_by_an_author_forgotten_everywhere_is_dropped(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_author(None, 100)
    await ingest.add(make_record(1, "said in another guild", guild_id=2, channel_id=20))
    await ingest.flush(vectors=True)
    assert await contents(store) == []


async def test_an_author_who_opts_back_in_is_remembered_again(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete_author(1, 100)
    await ingest.add(created_now(make_record(1, "said after opting back in")))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["said after opting back in"]


# -- edits before adds -----------------------------------------------------------------------------------------


async def test_an_edit_before_the_add_stores_the_edited_text(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    assert await ingest.edit(1, "my number is [removed]", datetime(2024, 6, 1, tzinfo=UTC)) is False
    await ingest.add(make_record(1, "my number is 555-0100"))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["my number is [removed]"]
    assert len(await consistent_ids(store, indexes)) == 1


async def test_the_newest_of_several_early_edits_is_stored(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.edit(1, "second edit", datetime(2024, 6, 2, tzinfo=UTC))
    await ingest.edit(1, "first edit, arriving late", datetime(2024, 6, 1, tzinfo=UTC))
    await ingest.add(make_record(1, "original"))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["second edit"]


async def test_an_early_edit_older_than_the_added_text_is_not_applied(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.edit(1, "first edit", datetime(2024, 6, 1, tzinfo=UTC))
    fetched = dataclasses.replace(make_record(1, "second edit"), edited_at=datetime(2024, 6, 2, tzinfo=UTC))
    await ingest.add(fetched)
    await ingest.flush(vectors=True)
    assert await contents(store) == ["second edit"]


async def test_an_early_edit_keeps_the_attachment_stand_ins(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.edit(1, "final", None)
    await ingest.add(make_record(1, "draft", attachments=("plan.pdf",)))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["final\n📎 plan.pdf"]


async def test_an_edit_of_a_deleted_message_stores_nothing(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.delete([1])
    assert await ingest.edit(1, "edited after the delete", None) is False
    await ingest.add(make_record(1, "original"))
    await ingest.flush(vectors=True)
    assert await contents(store) == []


# -- persistence -----------------------------------------------------------------------------------------------


async def test_a_tombstone_survives_a_restart(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: EmbeddingService,
    make_record: RecordFactory
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.delete([1])
    await memory.close()
    reopened = await Memory.open(core_profile, db_path, index_dir)
    try:
        await reopened.add(make_record(1, "deleted on Discord, still in an old export"))
        await reopened.flush(vectors=True)
        assert await contents(reopened.store) == []
    finally:
        await reopened.close()


async def test_a_forgotten_authors_message_does_not_come_back_after_a_restart(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: EmbeddingService,
    make_record: RecordFactory
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.add(make_record(1, "said, then forgotten with its author"))
    await memory.flush(vectors=True)
    await memory.forget_author(1, 100)
    await memory.close()
    reopened = await Memory.open(core_profile, db_path, index_dir)
    try:
        await reopened.add(make_record(1, "said, then forgotten with its author"))  # the history read again
        await reopened.flush(vectors=True)
        assert await contents(reopened.store) == []
    finally:
        await reopened.close()


async def test_a_forgotten_channels_message_does_not_come_back_after_a_restart(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, embedder: EmbeddingService,
    make_record: RecordFactory
) -> None:
    memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.add(make_record(1, "said, then forgotten with its channel"))
    await memory.flush(vectors=True)
    await memory.forget_channel(1, 10)
    await memory.close()
    reopened = await Memory.open(core_profile, db_path, index_dir)
    try:
        await reopened.add(make_record(1, "said, then forgotten with its channel"))
        await reopened.flush(vectors=True)
        assert await contents(reopened.store) == []
    finally:
        await reopened.close()


@pytest.fixture
async def second_queue(
    db_path: Path, tmp_path: Path, embedder: EmbeddingService, store: SqliteStore
) -> AsyncIterator[IngestQueue]:
    """Another process's queue: its own connection to the same database file, its own indexes."""
    other = await SqliteStore.open(db_path)
    registry = IndexRegistry(other, tmp_path / "other-indexes", embedder.model_name, embedder.dimension)
    await registry.load_all()
    queue = IngestQueue(other, embedder, registry, batch_size=8, queue_size=64)
    queue.start()
    yield queue
    await queue.close()
    await registry.close()
    await other.close()


async def test_a_tombstone_written_by_another_process_drops_the_add(
    ingest: IngestQueue, second_queue: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await second_queue.delete([1])
    await ingest.add(make_record(1, "deleted, as the other process saw"))
    await ingest.flush(vectors=True)
    assert await contents(store) == []


async def bury_at(store: SqliteStore, message_id: int, deleted_at: float) -> None:
    await store.write(WriteBatch("any-model", tombstones=[message_id], deleted_at=deleted_at))


async def test_tombstones_older_than_thirty_days_are_pruned(ingest: IngestQueue, store: SqliteStore) -> None:
    await bury_at(store, 1, time.time() - 31 * DAY_S)
    await bury_at(store, 2, time.time() - 29 * DAY_S)
    assert await ingest.prune_tombstones() == 1
    assert await tombstones(store) == [2]


async def test_a_message_whose_tombstone_was_pruned_can_be_stored(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await bury_at(store, 1, time.time() - 31 * DAY_S)
    await ingest.prune_tombstones()
    await ingest.add(make_record(1, "imported again, long after"))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["imported again, long after"]


async def test_opening_memory_prunes_old_tombstones(
    core_profile: MemoryProfile, db_path: Path, index_dir: Path, store: SqliteStore, embedder: EmbeddingService
) -> None:
    await bury_at(store, 1, time.time() - 31 * DAY_S)
    memory = await Memory.open(core_profile, db_path, index_dir)
    await memory.close()
    assert await tombstones(store) == []
