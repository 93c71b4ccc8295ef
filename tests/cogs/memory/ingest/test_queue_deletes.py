"""IngestQueue deletes with the real MiniLM, a real SQLite file and real FAISS: every way a message is forgotten
leaves FTS, embeddings and FAISS equal, and embeds no other message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest

from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import BatchRecorder, consistent_ids, contents, vector_bytes
from tests.cogs.memory.ingest.queue_checks import recorded  # noqa: F401  (a fixture, found by name)
from tests.fixtures.core import T0, RecordFactory


async def test_delete_removes_the_message_everywhere(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    for message_id in (1, 2, 3):
        await ingest.add(make_record(message_id, f"message {message_id}"))
    await ingest.flush(vectors=True)
    assert await ingest.delete([2]) == 1
    assert await contents(store) == ["message 1", "message 3"]
    assert len(await consistent_ids(store, indexes)) == 2


# Each forgets message 2 of 1, 2, 3 (retention forgets 1 too), and has no vector to compute for message 3.
FORGET_MIDDLE: dict[str, Callable[[IngestQueue, SqliteStore], Awaitable[int]]] = {
    "delete": lambda queue, _: queue.delete([2]),
    "bulk delete": lambda queue, _: queue.delete([2, 99]),
    "author in a guild": lambda queue, _: queue.delete_author(1, 300),
    "author everywhere": lambda queue, _: queue.delete_author(None, 300),
    "author in a channel": lambda queue, _: queue.delete_author(1, 300, channel_id=10),
    "erasure": lambda queue, store: queue.erase(lambda: store.refs_for_message_ids([2])),
    "retention": lambda queue, _: queue.delete_older_than(1, T0 + timedelta(minutes=2.5)),
}


@pytest.mark.parametrize("forget", FORGET_MIDDLE.values(), ids=FORGET_MIDDLE.keys())
async def test_forgetting_a_message_embeds_nothing_and_leaves_the_next_one_s_vector(
    recorded: tuple[IngestQueue, BatchRecorder], store: SqliteStore, indexes: IndexRegistry,
    make_record: RecordFactory, forget: Callable[[IngestQueue, SqliteStore], Awaitable[int]]
) -> None:
    queue, recorder = recorded
    await queue.add(make_record(1, "good morning", author_name="carol"))
    await queue.add(make_record(2, "my address is 12 Elm St", author_id=300, author_name="bob"))
    await queue.add(make_record(3, "noted"))
    await queue.flush(vectors=True)
    successor = await vector_bytes(store, 3)
    recorder.calls.clear()
    assert await forget(queue, store) >= 1
    await queue.flush(vectors=True)
    # No vector quotes another message: the survivors' vectors never held the forgotten text.
    assert recorder.calls == []
    assert await vector_bytes(store, 3) == successor
    assert (await contents(store))[-1:] == ["noted"]
    assert "my address is 12 Elm St" not in await contents(store)
    await consistent_ids(store, indexes)  # FTS, embeddings and FAISS still hold the same messages


async def test_bulk_delete_forgets_only_the_named_messages(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    for message_id, text in enumerate(["keep me", "spam one", "spam two", "after the spam"], start=1):
        await ingest.add(make_record(message_id, text))
    await ingest.flush(vectors=True)
    assert await ingest.delete([3, 2, 99]) == 2
    assert await contents(store) == ["keep me", "after the spam"]
    assert len(await consistent_ids(store, indexes)) == 2


async def test_delete_arriving_while_the_add_is_queued_does_not_resurrect_it(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "posted by mistake"))
    assert await ingest.delete([1]) == 1
    await ingest.flush(vectors=True)
    assert await consistent_ids(store, indexes) == []


async def test_delete_channel_removes_the_channel_and_its_threads_only(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "in the channel"))
    await ingest.add(make_record(2, "in its thread", channel_id=50, parent_channel_id=10))
    await ingest.add(make_record(3, "another channel", channel_id=11))
    await ingest.flush(vectors=True)
    assert await ingest.delete_channel(1, 10) == 2
    assert await contents(store) == ["another channel"]
    assert len(await consistent_ids(store, indexes)) == 1


async def test_delete_guild_leaves_other_guilds_alone(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "guild one"))
    await ingest.add(make_record(2, "guild two", guild_id=2, channel_id=20))
    await ingest.flush(vectors=True)
    await indexes.save_dirty()
    assert await ingest.delete_guild(1) == 1
    assert await consistent_ids(store, indexes, guild_id=1) == []
    assert len(await consistent_ids(store, indexes, guild_id=2)) == 1
    assert not indexes.path_for(1).exists()


async def test_delete_author_in_one_guild(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "mine here"))
    await ingest.add(make_record(2, "someone else", author_id=200))
    await ingest.add(make_record(3, "mine elsewhere", guild_id=2, channel_id=20))
    await ingest.flush(vectors=True)
    assert await ingest.delete_author(1, 100) == 1
    assert len(await consistent_ids(store, indexes, guild_id=1)) == 1
    assert len(await consistent_ids(store, indexes, guild_id=2)) == 1


async def test_delete_author_everywhere_forgets_them_in_every_guild(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "forget me please", author_id=300, author_name="dave"))
    await ingest.add(make_record(2, "reply to dave", author_name="erin"))
    await ingest.add(make_record(3, "also mine", guild_id=2, author_id=300, author_name="dave", channel_id=20))
    await ingest.flush(vectors=True)
    assert await ingest.delete_author(None, 300) == 2
    assert await contents(store) == ["reply to dave"]
    assert len(await consistent_ids(store, indexes, guild_id=1)) == 1
    assert await consistent_ids(store, indexes, guild_id=2) == []
