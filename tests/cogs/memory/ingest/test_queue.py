"""IngestQueue with the real MiniLM, a real SQLite file and real FAISS: every sync path keeps all three equal."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import ATTACHMENT_PREFIX, IngestQueue, stored_content
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.language.keywords import embedding_input
from cogs.memory.vectors.stored import VectorSource
from cogs.memory.vectors.index import IndexRegistry
from tests.fixtures.core import T0, RecordFactory, fetchall


async def consistent_ids(store: SqliteStore, indexes: IndexRegistry, guild_id: int = 1) -> list[int]:
    """The guild's message row ids, after checking FTS, embeddings and FAISS hold exactly the same ids."""
    messages = await fetchall(store, "SELECT id FROM messages WHERE guild_id = ? ORDER BY id", (guild_id,))
    fts = await fetchall(
        store,
        "SELECT rowid FROM messages_fts WHERE rowid IN (SELECT id FROM messages WHERE guild_id = ?) ORDER BY rowid",
        (guild_id,))
    vectors = await fetchall(
        store, "SELECT message_rowid FROM embeddings JOIN messages ON id = message_rowid WHERE guild_id = ? "
        "ORDER BY message_rowid", (guild_id,))
    index = indexes.get(guild_id)
    in_index = sorted(index.ids().tolist()) if index is not None else []
    ids = [row[0] for row in messages]
    assert [row[0] for row in fts] == ids
    assert [row[0] for row in vectors] == ids
    assert in_index == ids
    return ids


async def stored_vector(store: SqliteStore, message_id: int) -> np.ndarray:
    rows = await fetchall(
        store, "SELECT vector FROM embeddings JOIN messages ON id = message_rowid WHERE message_id = ?", (message_id,))
    return np.frombuffer(rows[0][0], dtype="<f4")


@pytest.fixture
def mean_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """Store each vector as the mean of the message alone and after its predecessor (the benchmark's ``mean`` form,
    the core's before issue 25): what shows that ingest hands each message its real predecessor, which that
    benchmark row needs at ingest. Edits and deletes embed no other message, in any form."""

    def with_previous(source: VectorSource) -> list[str]:
        alone = embedding_input(source.author_name, source.content, None)
        return [alone] if source.previous is None else [
            alone, embedding_input(source.author_name, source.content, source.previous)]

    monkeypatch.setattr(VectorSource, "texts", with_previous)


def expected_vector(embedder: EmbeddingService, author: str, content: str, previous: tuple[str, str] | None) -> np.ndarray:
    """The stored vector under the ``mean`` form: the message alone and after ``previous``, embedded, averaged (the
    message alone when ``previous`` is None: what the core stores)."""
    texts = [embedding_input(author, content, None)]
    texts += [embedding_input(author, content, previous)] if previous else []
    return embedder.embed_sync(texts).mean(axis=0)


class BatchRecorder:
    """The real model behind a recorder of what it is asked to embed; ``fail_first`` makes the first call raise."""

    def __init__(self, inner: EmbeddingService, fail_first: bool = False) -> None:
        self._inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.calls: list[list[str]] = []
        self._fail = fail_first

    @property
    def sizes(self) -> list[int]:
        return [len(texts) for texts in self.calls]

    async def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if self._fail:
            self._fail = False
            raise RuntimeError("model fell over")
        return await self._inner.embed(texts)


@pytest.fixture
async def recorded(store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService
                   ) -> AsyncIterator[tuple[IngestQueue, BatchRecorder]]:
    """A running ingest queue over the real model, behind a recorder."""
    recorder = BatchRecorder(embedder)
    queue = IngestQueue(store, recorder, indexes, batch_size=8, queue_size=64)
    queue.start()
    yield queue, recorder
    await queue.close()


async def vector_bytes(store: SqliteStore, message_id: int) -> bytes:
    """A message's stored vector exactly as written (to tell an untouched vector from one embedded again)."""
    rows = await fetchall(
        store, "SELECT vector FROM embeddings JOIN messages ON id = message_rowid WHERE message_id = ?", (message_id,))
    return bytes(rows[0][0])


async def contents(store: SqliteStore) -> list[str]:
    rows = await fetchall(store, "SELECT content FROM messages ORDER BY created_at, message_id")
    return [row[0] for row in rows]


async def test_added_messages_reach_sqlite_fts_and_faiss(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    for message_id in range(1, 21):
        await ingest.add(make_record(message_id, f"message number {message_id}"))
    await ingest.flush(vectors=True)
    assert len(await consistent_ids(store, indexes)) == 20


async def test_vector_includes_the_previous_message_of_the_channel(
    mean_form: None, ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "who wants to go hiking on saturday?", author_name="bob"))
    await ingest.add(make_record(2, "something else entirely", channel_id=11))
    await ingest.add(make_record(3, "me!", author_name="carol"))
    await ingest.flush(vectors=True)
    want = expected_vector(embedder, "carol", "me!", ("bob", "who wants to go hiking on saturday?"))
    np.testing.assert_allclose(await stored_vector(store, 3), want, atol=1e-4)


async def test_previous_message_is_read_from_sqlite_across_batches(
    mean_form: None, ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "the deploy failed again", author_name="bob"))
    await ingest.flush(vectors=True)
    await ingest.add(make_record(2, "I'll look at the logs"))
    await ingest.flush(vectors=True)
    want = expected_vector(embedder, "alice", "I'll look at the logs", ("bob", "the deploy failed again"))
    np.testing.assert_allclose(await stored_vector(store, 2), want, atol=1e-4)


async def test_first_message_of_a_channel_has_no_previous(
    ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "hello world"))
    await ingest.flush(vectors=True)
    np.testing.assert_allclose(await stored_vector(store, 1), expected_vector(embedder, "alice", "hello world", None),
                               atol=1e-4)


async def test_out_of_order_message_uses_its_real_predecessor(
    mean_form: None, ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "first"))
    await ingest.add(make_record(3, "third"))
    await ingest.flush(vectors=True)
    await ingest.add(make_record(2, "second, imported late"))
    await ingest.flush(vectors=True)
    want = expected_vector(embedder, "alice", "second, imported late", ("alice", "first"))
    np.testing.assert_allclose(await stored_vector(store, 2), want, atol=1e-4)


@pytest.mark.parametrize("content", ["", "   ", "\n\t  \n"])
async def test_empty_or_blank_messages_are_not_stored(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory, content: str
) -> None:
    await ingest.add(make_record(1, content))
    await ingest.flush(vectors=True)
    assert await contents(store) == []


async def test_attachment_only_message_is_stored_as_its_stand_in(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "", attachments=("holiday_photo.jpg",)))
    await ingest.flush(vectors=True)
    assert await contents(store) == [ATTACHMENT_PREFIX + "holiday_photo.jpg"]


async def test_attachment_stand_in_is_keyword_searchable(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "look at this", attachments=("budget_2024.xlsx",)))
    await ingest.flush(vectors=True)
    rows = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'xlsx'")
    assert len(rows) == 1


async def test_four_thousand_character_message_is_stored_whole(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    long_text = ("word " * 800)[:4000]
    await ingest.add(make_record(1, long_text))
    await ingest.flush(vectors=True)
    assert await contents(store) == [long_text.strip()]
    assert await consistent_ids(store, indexes)


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        ("nul\x00byte", "nulbyte"),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("שלום \u200fעולם", "שלום \u200fעולם"),
        ("z\u0351\u0352\u0357a\u035bl\u0346g\u0315o", "z\u0351\u0352\u0357a\u035bl\u0346g\u0315o"),
        ("party 🎉🎉 👩‍👩‍👧", "party 🎉🎉 👩‍👩‍👧"),
    ],
    ids=["nul", "lone-surrogate", "rtl", "zalgo", "emoji"],
)
async def test_odd_unicode_is_stored_and_indexed(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory,
    content: str, stored: str
) -> None:
    await ingest.add(make_record(1, content))
    await ingest.flush(vectors=True)
    assert await contents(store) == [stored]
    assert len(await consistent_ids(store, indexes)) == 1


def test_stored_content_drops_blank_stand_ins() -> None:
    assert stored_content("hi", ("  ", "a.png")) == f"hi\n{ATTACHMENT_PREFIX}a.png"


async def test_adding_a_stored_message_again_is_ignored(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "once"))
    await ingest.flush(vectors=True)
    await ingest.add(make_record(1, "twice"))
    await ingest.flush(vectors=True)
    assert await contents(store) == ["once"]
    assert len(await consistent_ids(store, indexes)) == 1


# -- edits -----------------------------------------------------------------------------------------------------


async def test_edit_replaces_content_fts_and_vector(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService,
    make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "my cat is called tom"))
    await ingest.flush(vectors=True)
    assert await ingest.edit(1, "my dog is called rex", datetime(2024, 6, 1, tzinfo=UTC))
    fts = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'cat'")
    assert fts == []
    assert await contents(store) == ["my dog is called rex"]
    np.testing.assert_allclose(await stored_vector(store, 1),
                               expected_vector(embedder, "alice", "my dog is called rex", None), atol=1e-4)
    assert len(await consistent_ids(store, indexes)) == 1


async def test_an_edit_embeds_the_edited_message_alone_and_leaves_its_successor_s_vector(
    recorded: tuple[IngestQueue, BatchRecorder], store: SqliteStore, indexes: IndexRegistry,
    make_record: RecordFactory
) -> None:
    queue, recorder = recorded
    await queue.add(make_record(1, "my password is hunter2", author_name="bob"))
    await queue.add(make_record(2, "thanks"))
    await queue.flush(vectors=True)
    successor = await vector_bytes(store, 2)
    recorder.calls.clear()
    assert await queue.edit(1, "[redacted]", None)
    await queue.flush(vectors=True)
    # A vector is the message alone: the successor's never read the edited text, so the model is not asked again.
    assert recorder.calls == [[embedding_input("bob", "[redacted]", None)]]
    assert await vector_bytes(store, 2) == successor
    assert len(await consistent_ids(store, indexes)) == 2


async def test_edit_keeps_attachment_stand_ins(
    ingest: IngestQueue, store: SqliteStore, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "draft", attachments=("plan.pdf",)))
    await ingest.flush(vectors=True)
    await ingest.edit(1, "final", None)
    assert await contents(store) == [f"final\n{ATTACHMENT_PREFIX}plan.pdf"]


async def test_edit_to_nothing_forgets_the_message(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "oops"))
    await ingest.flush(vectors=True)
    await ingest.edit(1, "   ", None)
    assert await consistent_ids(store, indexes) == []


async def test_edit_of_an_unknown_message_returns_false(ingest: IngestQueue) -> None:
    assert await ingest.edit(404, "anything", None) is False


async def test_edit_arriving_while_the_add_is_queued_is_not_lost(
    ingest: IngestQueue, store: SqliteStore, indexes: IndexRegistry, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "typo teh"))
    assert await ingest.edit(1, "typo the", None)
    await ingest.flush(vectors=True)
    assert await contents(store) == ["typo the"]
    assert len(await consistent_ids(store, indexes)) == 1


# -- deletes ---------------------------------------------------------------------------------------------------


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


# -- batching and failures -------------------------------------------------------------------------------------


async def test_a_backlog_is_embedded_in_wider_batches(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    recorder = BatchRecorder(embedder)
    queue = IngestQueue(store, recorder, indexes, batch_size=4, queue_size=64)
    for message_id in range(1, 41):
        await queue.add(make_record(message_id, f"backlog {message_id}"))
    queue.start()
    await queue.flush(vectors=True)
    await queue.close()
    assert recorder.sizes == [40]  # in one call: each message alone


async def test_a_single_live_message_is_not_held_for_a_full_batch(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    recorder = BatchRecorder(embedder)
    queue = IngestQueue(store, recorder, indexes, batch_size=16, queue_size=64)
    queue.start()
    await queue.add(make_record(1, "just one"))
    await queue.flush(vectors=True)
    await queue.close()
    assert recorder.sizes == [1]


async def test_a_failed_embedding_loses_nothing(
    store: SqliteStore, indexes: IndexRegistry, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    queue = IngestQueue(store, BatchRecorder(embedder, fail_first=True), indexes, batch_size=4, queue_size=64)
    queue.start()
    await queue.add(make_record(1, "kept although the model failed once"))
    await queue.flush(vectors=True)
    await queue.add(make_record(2, "stored"))
    await queue.flush(vectors=True)
    await queue.close()
    assert await contents(store) == ["kept although the model failed once", "stored"]
    assert len(await consistent_ids(store, indexes)) == 2


async def test_a_late_message_in_a_batch_does_not_hide_the_stored_predecessor(
    mean_form: None, ingest: IngestQueue, store: SqliteStore, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await ingest.add(make_record(1, "one"))
    await ingest.add(make_record(3, "three", author_name="bob"))
    await ingest.flush(vectors=True)
    await ingest.add(make_record(2, "two, imported late"))
    await ingest.add(make_record(4, "four"))
    await ingest.flush(vectors=True)
    want = expected_vector(embedder, "alice", "four", ("bob", "three"))
    np.testing.assert_allclose(await stored_vector(store, 4), want, atol=1e-4)
