"""Storing messages with a real SQLite file, the real MiniLM and real FAISS: a write that fails is retried and then
reported by flush, never counted as done, and stored once the database lets it; a message whose data cannot be
stored is rejected alone, with a log line naming it."""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestError, IngestQueue, RetryPolicy
from cogs.memory.ingest.spool import IngestSpool
from cogs.memory.records import MessageRecord
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import consistent_ids, contents
from tests.fixtures.core import T0, RecordFactory
from tests.fixtures.waiting import eventually

QUICK_RETRY = RetryPolicy(write_attempts=2, first_delay_s=0.01, max_delay_s=0.05)


@pytest.fixture
async def quick_queue(db_path: Path, index_dir: Path, embedder: EmbeddingService
                      ) -> AsyncIterator[tuple[IngestQueue, SqliteStore, IndexRegistry]]:
    """An ingest queue whose writes give up on a locked database after 50 ms, retried 10 ms apart."""
    store = await SqliteStore.open(db_path, busy_timeout_ms=50)
    indexes = IndexRegistry(store, index_dir, embedder.model_name, embedder.dimension)
    queue = IngestQueue(store, embedder, indexes, batch_size=8, queue_size=64, retry=QUICK_RETRY)
    queue.start()
    yield queue, store, indexes
    await queue.close()
    await indexes.close()
    await store.close()


@pytest.fixture
def locked(db_path: Path, quick_queue: object) -> Iterator[sqlite3.Connection]:
    """Another process's connection holding the database's write lock until the test releases it."""
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    yield blocker
    if blocker.in_transaction:
        blocker.rollback()
    blocker.close()


@pytest.fixture
async def restarted_during_an_outage(
    db_path: Path, index_dir: Path, embedder: EmbeddingService, tmp_path: Path, make_record: RecordFactory
) -> AsyncIterator[IngestQueue]:
    """An ingest queue started over a spool that an earlier run left messages 1-3 in (two in guild 1, one in guild
    2), while the database still refuses writes; returned once it has read them back from the spool."""
    spool_path = tmp_path / "spool.sqlite3"
    earlier_run = IngestSpool(spool_path)
    await earlier_run.add([make_record(1, "kept while the database was away"),
                           make_record(2, "kept in another guild", guild_id=2),
                           make_record(3, "kept last", channel_id=11)])
    await earlier_run.close()
    store = await SqliteStore.open(db_path, busy_timeout_ms=50)
    indexes = IndexRegistry(store, index_dir, embedder.model_name, embedder.dimension)
    queue = IngestQueue(store, embedder, indexes, batch_size=8, queue_size=64, retry=QUICK_RETRY,
                        spool=IngestSpool(spool_path))
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        queue.start()
        await eventually(lambda: queue.queued == 3, what="the three kept messages read back")
        yield queue
    finally:
        blocker.rollback()
        blocker.close()
        await queue.close()
        await indexes.close()
        await store.close()


@pytest.fixture
def refusing(db_path: Path, ingest: IngestQueue) -> None:
    """A rule only SQLite knows: an insert of a message containing "refused" fails, and the whole batch's with it."""
    with sqlite3.connect(db_path) as other:
        other.execute("CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.content LIKE '%refused%' "
                      "BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END")


async def held(queue: IngestQueue, *records: MessageRecord) -> None:
    """Add ``records`` while the database is locked: the flush says they were not stored."""
    for record in records:
        await queue.add(record)
    with pytest.raises(IngestError):
        await queue.flush(vectors=True)


async def test_a_locked_database_makes_flush_say_what_was_not_stored(
    quick_queue: tuple[IngestQueue, SqliteStore, IndexRegistry], locked: sqlite3.Connection,
    make_record: RecordFactory
) -> None:
    queue, _, _ = quick_queue
    await queue.add(make_record(1, "said while another process wrote"))
    await queue.add(make_record(2, "and this too"))
    with pytest.raises(IngestError) as raised:
        await queue.flush(vectors=True)
    assert raised.value.report.not_stored == (1, 2)
    assert str(raised.value) == ("2 messages not stored yet (another process holds the database's write lock); "
                                 "memory keeps them and tries again")


async def test_messages_held_by_a_locked_database_are_stored_once_it_is_released(
    quick_queue: tuple[IngestQueue, SqliteStore, IndexRegistry], locked: sqlite3.Connection,
    make_record: RecordFactory
) -> None:
    queue, store, indexes = quick_queue
    await held(queue, make_record(1, "said while another process wrote"), make_record(2, "and this too"))
    locked.rollback()
    report = await queue.flush(vectors=True)
    assert (report.stored, report.not_stored) == (2, ())
    assert len(await consistent_ids(store, indexes)) == 2


async def test_a_message_added_after_a_failed_write_is_stored_with_the_held_ones(
    quick_queue: tuple[IngestQueue, SqliteStore, IndexRegistry], locked: sqlite3.Connection,
    make_record: RecordFactory
) -> None:
    queue, store, _ = quick_queue
    await held(queue, make_record(1, "held"))
    await queue.add(make_record(2, "queued behind it"))
    locked.rollback()
    await queue.flush(vectors=True)
    assert await contents(store) == ["held", "queued behind it"]


async def test_a_held_message_deleted_meanwhile_is_not_stored(
    quick_queue: tuple[IngestQueue, SqliteStore, IndexRegistry], locked: sqlite3.Connection,
    make_record: RecordFactory
) -> None:
    queue, store, _ = quick_queue
    await held(queue, make_record(1, "posted, then deleted while the database was locked"))
    with pytest.raises(sqlite3.OperationalError):
        await queue.delete([1])  # its own write fails too, but the delete is remembered
    locked.rollback()
    await queue.flush(vectors=True)
    assert await contents(store) == []


async def test_messages_read_back_from_the_spool_are_reported_not_stored_while_the_database_is_away(
    restarted_during_an_outage: IngestQueue
) -> None:
    report = await restarted_during_an_outage.settle()
    assert report.not_stored == (1, 2, 3)


async def test_the_catch_up_anchor_counts_messages_read_back_from_the_spool(
    restarted_during_an_outage: IngestQueue
) -> None:
    queue, later = restarted_during_an_outage, T0 + timedelta(days=1)
    anchors = (queue.newest_queued(1, None, later), queue.newest_queued(1, 10, later),
               queue.newest_queued(2, None, later), queue.newest_queued(1, None, T0 + timedelta(minutes=2)))
    assert anchors == (3, 1, 2, 1)


async def test_a_message_whose_data_cannot_be_stored_is_rejected_alone(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await ingest.add(make_record(1, "one"))
    await ingest.add(dataclasses.replace(make_record(2, "x"), content=None))  # "content": null in an export
    await ingest.add(make_record(3, "three"))
    with caplog.at_level(logging.ERROR, logger="cogs.memory.ingest.writer"), pytest.raises(IngestError) as raised:
        await ingest.flush(vectors=True)
    assert (raised.value.report.rejected, raised.value.report.stored) == ((2,), 2)
    assert "Message 2 cannot be stored and is dropped: AttributeError" in caplog.text
    assert await contents(store) == ["one", "three"]


async def test_a_row_sqlite_refuses_is_rejected_alone_and_the_rest_stored(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, refusing: None, make_record: RecordFactory,
    caplog: pytest.LogCaptureFixture
) -> None:
    for message_id in range(1, 6):
        await ingest.add(make_record(message_id, "refused" if message_id == 4 else f"message {message_id}"))
    with caplog.at_level(logging.ERROR, logger="cogs.memory.ingest.writer"), pytest.raises(IngestError) as raised:
        await ingest.flush(vectors=True)
    assert raised.value.report.rejected == (4,)
    assert "Message 4 cannot be stored and is dropped: IntegrityError: refused by a trigger" in caplog.text
    assert await contents(store) == ["message 1", "message 2", "message 3", "message 5"]
    assert len(await consistent_ids(store, indexes)) == 4


async def test_a_lone_message_sqlite_refuses_waits_until_another_one_shows_the_database_works(
    ingest: IngestQueue, refusing: None, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "refused"))
    with pytest.raises(IngestError) as alone:
        await ingest.flush(vectors=True)
    await ingest.add(make_record(2, "a message that goes in"))
    with pytest.raises(IngestError) as with_another:
        await ingest.flush(vectors=True)
    assert (alone.value.report.not_stored, with_another.value.report.rejected) == ((1,), (1,))


async def test_flush_reports_what_it_stored_and_what_it_skipped(
    ingest: IngestQueue, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "first"))
    await ingest.add(make_record(2, "second"))
    first = await ingest.flush(vectors=True)
    await ingest.add(make_record(1, "first"))  # already stored
    await ingest.add(make_record(3, "   "))  # nothing to remember
    await ingest.add(make_record(4, "fourth"))
    second = await ingest.flush(vectors=True)
    assert ((first.stored, first.skipped), (second.stored, second.skipped)) == ((2, 0), (1, 2))
