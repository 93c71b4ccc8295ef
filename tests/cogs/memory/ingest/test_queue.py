"""IngestQueue with the real MiniLM, a real SQLite file and real FAISS: every sync path keeps all three equal (the
deletes: test_queue_deletes.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import ATTACHMENT_PREFIX, IngestQueue, stored_content
from cogs.memory.language.keywords import embedding_input
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.vectors.registry import IndexRegistry
from tests.cogs.memory.ingest.queue_checks import (BatchRecorder, consistent_ids, contents, expected_vector,
                                                   stored_vector, vector_bytes)
from tests.cogs.memory.ingest.queue_checks import mean_form, recorded  # noqa: F401  (fixtures, found by name)
from tests.fixtures.core import RecordFactory, fetchall


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
