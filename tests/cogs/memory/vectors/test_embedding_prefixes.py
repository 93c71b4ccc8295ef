"""Per-model query/passage prefixes (E5's "query: " / "passage: "), on a tiny random sentence-transformers model
saved under an E5 name: the loading path, which texts get which prefix, and re-embedding on a switch."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from cogs.memory.vectors.embedding import EmbeddingService, Prefixes, model_prefixes
from cogs.memory.memory import Memory
from cogs.memory.records import SearchFilters
from cogs.memory.language.keywords import embedding_input
from tests.fixtures.core import RecordFactory, core_profile_for, fetchall

def reference(path: Path, texts: list[str]) -> np.ndarray:
    """What sentence-transformers itself gives for exactly these texts."""
    return SentenceTransformer(str(path), device="cpu").encode(texts, normalize_embeddings=True)


@pytest.fixture
def service(tiny_e5: Path) -> Iterator[EmbeddingService]:
    service = EmbeddingService(str(tiny_e5), device="cpu", batch_size=2)
    service.load()
    yield service
    service.shutdown()


def test_e5_models_are_known_by_name_wherever_they_are_stored(tiny_e5: Path) -> None:
    e5 = Prefixes(query="query: ", passage="passage: ")
    assert model_prefixes("intfloat/multilingual-e5-small") == e5
    assert model_prefixes(str(tiny_e5)) == e5
    assert model_prefixes("all-MiniLM-L6-v2") == Prefixes()


def test_a_profile_prefix_replaces_the_known_one() -> None:
    assert model_prefixes("intfloat/multilingual-e5-base", query="", passage="note: ") == Prefixes("", "note: ")


async def test_a_query_is_embedded_with_the_query_prefix(service: EmbeddingService, tiny_e5: Path) -> None:
    vectors = await service.embed_queries(["the lake cabin"])
    np.testing.assert_allclose(vectors, reference(tiny_e5, ["query: the lake cabin"]), atol=1e-5)


@pytest.mark.parametrize("interactive", [True, False])
async def test_stored_texts_are_embedded_with_the_passage_prefix(
    service: EmbeddingService, tiny_e5: Path, interactive: bool
) -> None:
    texts = ["ann: the lake cabin is booked", "the printer is broken", "hello"]  # more than one batch of 2
    vectors = await service.embed(texts, interactive=interactive)
    np.testing.assert_allclose(vectors, reference(tiny_e5, [f"passage: {text}" for text in texts]), atol=1e-5)


def test_vectors_with_another_passage_prefix_are_stored_under_another_name(tiny_e5: Path) -> None:
    usual = EmbeddingService(str(tiny_e5))
    other_query = EmbeddingService(str(tiny_e5), query_prefix="")
    other_passage = EmbeddingService(str(tiny_e5), passage_prefix="note: ")
    assert usual.display_name == other_query.display_name == str(tiny_e5)
    assert usual.model_name == other_query.model_name != other_passage.model_name
    assert other_passage.display_name == f"{tiny_e5} (passage prefix 'note: ')"


async def test_switching_to_an_e5_model_re_embeds_stored_messages_with_its_prefix(
    tiny_e5: Path, db_path: Path, index_dir: Path, make_record: RecordFactory
) -> None:
    memory = await Memory.open(core_profile_for(embedding_model=str(tiny_e5), embedding_passage_prefix=""),
                               db_path, index_dir)
    try:
        await memory.add(make_record(1, "the lake cabin is booked", author_name="ann"))
        await memory.flush(vectors=True)
        await memory.switch_profile(dataclasses.replace(memory.profile, embedding_passage_prefix=None))
        rows = await fetchall(memory.store, "SELECT model, vector FROM embeddings")
        key = memory.embedder.model_name
        hits = await memory.search_engine.search("lake cabin", SearchFilters(guild_id=1), 1, mode="vector")
    finally:
        await memory.close()
    stored = {model: np.frombuffer(blob, dtype=np.float32) for model, blob in rows}
    expected = reference(tiny_e5, ["passage: " + embedding_input("ann", "the lake cabin is booked", None)])[0]
    np.testing.assert_allclose(stored[key], expected, atol=1e-5)
    assert [hit.message_id for hit in hits] == [1]
