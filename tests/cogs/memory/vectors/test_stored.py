"""Stored vectors (cogs/memory/vectors/stored.py): a message embedded alone, through the one seam ingest, the vector
filler and re-embedding share; vectors of an older input form (the mean of alone and after the predecessor, before
issue 25) are embedded again in the background. Both stores (SQLite + FAISS, PostgreSQL + pgvector), the real
MiniLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dataclasses

import numpy as np
import pytest

from cogs.memory.vectors import embedding
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue
from cogs.memory.memory import Memory
from cogs.memory.records import SearchFilters
from cogs.memory.store.protocol import Store
from cogs.memory.language.keywords import embedding_input
from tests.fixtures.core import RecordFactory, core_profile_for
from cogs.memory.vectors.stored import VectorSource
from tests.fixtures.stores import query, stored_vector

QUESTION = "where do you work these days?"
ANSWER = "at Ridgeway Cycles, fixing bikes all day"


async def rowid_of(store: Store, message_id: int) -> int:
    [(rowid,)] = await query(store, "SELECT id FROM messages WHERE message_id = ?", message_id)
    return rowid


async def expected_answer_vector(embedder: EmbeddingService) -> np.ndarray:
    """The answer embedded alone (with the model's passage prefix)."""
    [alone] = await embedder.embed([embedding_input("dan", ANSWER, None)])
    return alone


async def old_answer_vector(embedder: EmbeddingService) -> np.ndarray:
    """What the answer's vector was before issue 25: alone and after the question, averaged."""
    alone, in_context = await embedder.embed([embedding_input("dan", ANSWER, None),
                                              embedding_input("dan", ANSWER, ("mei", QUESTION))])
    return (alone + in_context) / 2.0


def with_previous(source: VectorSource) -> list[str]:
    """What the version before issue 25 embedded for a message: it alone, then after its predecessor."""
    alone = embedding_input(source.author_name, source.content, None)
    return [alone] if source.previous is None else [
        alone, embedding_input(source.author_name, source.content, source.previous)]


async def test_a_stored_vector_is_the_message_alone_not_read_after_its_predecessor(
    memory_ingest: IngestQueue, memory_store: Store, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await memory_ingest.add(make_record(1, QUESTION, author_name="mei"))
    await memory_ingest.add(make_record(2, ANSWER, author_name="dan"))
    await memory_ingest.flush(vectors=True)
    stored = await stored_vector(memory_store, await rowid_of(memory_store, 2), embedder.model_name)
    np.testing.assert_allclose(stored, await expected_answer_vector(embedder), atol=1e-5)


async def test_an_edit_of_the_predecessor_leaves_its_successor_s_vector_as_it_is(
    memory_ingest: IngestQueue, memory_store: Store, embedder: EmbeddingService, make_record: RecordFactory
) -> None:
    await memory_ingest.add(make_record(1, "what do you do?", author_name="mei"))
    await memory_ingest.add(make_record(2, ANSWER, author_name="dan"))
    await memory_ingest.flush(vectors=True)
    await memory_ingest.edit(1, QUESTION, None)
    await memory_ingest.flush(vectors=True)
    stored = await stored_vector(memory_store, await rowid_of(memory_store, 2), embedder.model_name)
    np.testing.assert_allclose(stored, await expected_answer_vector(embedder), atol=1e-5)


async def test_vector_search_scores_a_message_by_its_cosine_with_the_question(
    memory_ingest: IngestQueue, memory_store: Store, embedder: EmbeddingService, make_record: RecordFactory,
    search_engine: Any
) -> None:
    # The inner product with a unit vector: on PostgreSQL too (its index orders by <#>).
    await memory_ingest.add(make_record(1, QUESTION, author_name="mei"))
    await memory_ingest.add(make_record(2, ANSWER, author_name="dan"))
    await memory_ingest.flush(vectors=True)
    expected = await expected_answer_vector(embedder)
    question = await embedder.embed_queries(["who fixes bikes?"])
    hits = dict(await search_engine._vector_hits("who fixes bikes?", SearchFilters(guild_id=1), 2))
    assert np.linalg.norm(expected) == pytest.approx(1.0, abs=1e-4)
    assert hits[await rowid_of(memory_store, 2)] == pytest.approx(float(expected @ question[0]), abs=1e-4)


def test_the_key_of_stored_vectors_names_the_input_form(monkeypatch: pytest.MonkeyPatch) -> None:
    before = EmbeddingService("all-MiniLM-L6-v2").model_name
    monkeypatch.setattr(embedding, "INPUT_FORM", "message after previous")
    assert (before, EmbeddingService("all-MiniLM-L6-v2").model_name) == (
        "all-MiniLM-L6-v2 [message alone]", "all-MiniLM-L6-v2 [message after previous]")


async def test_vectors_of_another_input_form_are_embedded_again_in_the_background(
    db_path: Path, index_dir: Path, store_url: str | None, embedder: EmbeddingService, make_record: RecordFactory,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        # What the version before issue 25 stored, under its key: the mean of alone and after the predecessor.
        patch.setattr(embedding, "INPUT_FORM", "mean of alone and after previous")
        patch.setattr(VectorSource, "texts", with_previous)
        memory = await Memory.open(core_profile_for(), db_path, index_dir, store_url)
        try:
            for message_id, (author, content) in enumerate([("mei", QUESTION), ("dan", ANSWER)], start=1):
                await memory.add(make_record(message_id, content, author_name=author))
            await memory.flush(vectors=True)
            old = await stored_vector(memory.store, await rowid_of(memory.store, 2), memory.embedder.model_name)
        finally:
            await memory.close()
    np.testing.assert_allclose(old, await old_answer_vector(embedder), atol=1e-5)
    memory = await Memory.open(core_profile_for(), db_path, index_dir, store_url)
    try:
        await memory.flush(vectors=True)
        key = memory.embedder.model_name
        [(counted,)] = await query(memory.store, "SELECT COUNT(*) FROM embeddings WHERE model = ?", key)
        stored = await stored_vector(memory.store, await rowid_of(memory.store, 2), key)
        hits = await memory.search_engine.search("Ridgeway Cycles", SearchFilters(guild_id=1), 1, mode="vector")
    finally:
        await memory.close()
    assert (counted, [hit.message_id for hit in hits]) == (2, [2])
    np.testing.assert_allclose(stored, await expected_answer_vector(embedder), atol=1e-5)


async def test_a_switch_to_another_model_stores_each_message_alone(
    tiny_e5: Path, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    # SQLite only: the PostgreSQL vector column has MiniLM's width, and the tiny model's is 16.
    memory = await Memory.open(core_profile_for(), db_path, index_dir)
    try:
        for message_id, (author, content) in enumerate([("mei", QUESTION), ("dan", ANSWER)], start=1):
            await memory.add(make_record(message_id, content, author_name=author))
        await memory.flush(vectors=True)
        await memory.switch_profile(dataclasses.replace(memory.profile, embedding_model=str(tiny_e5)))
        stored = await stored_vector(memory.store, await rowid_of(memory.store, 2), memory.embedder.model_name)
        expected = await expected_answer_vector(memory.embedder)
    finally:
        await memory.close()
    np.testing.assert_allclose(stored, expected, atol=1e-5)
