"""VectorIndex and IndexRegistry with real FAISS: search, removal, restriction, IVF, atomic save, verify/rebuild."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from cogs.memory import vector_index
from cogs.memory.store import MemoryStore, NewRow, WriteBatch
from cogs.memory.vector_index import IndexFileError, IndexRegistry, VectorIndex
from tests.fixtures.core import RecordFactory

DIM = 16
MODEL = "test-model"


def units(count: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def filled(count: int, flat_max: int = 1_000) -> tuple[VectorIndex, np.ndarray]:
    index = VectorIndex(DIM, MODEL, flat_max=flat_max)
    vectors = units(count)
    index.add(np.arange(1, count + 1), vectors)
    return index, vectors


def test_search_finds_the_vector_itself_first() -> None:
    index, vectors = filled(50)
    scores, ids = index.search(vectors[9], 3)
    assert ids[0, 0] == 10
    assert scores[0, 0] == pytest.approx(1.0, abs=1e-5)


def test_missing_results_are_padded_with_minus_one() -> None:
    index, vectors = filled(2)
    scores, ids = index.search(vectors[0], 4)
    assert ids[0].tolist()[2:] == [-1, -1]
    assert np.isneginf(scores[0, 2:]).all()


def test_removed_ids_are_never_returned() -> None:
    index, vectors = filled(20)
    assert index.remove(np.array([5, 6])) == 2
    _, ids = index.search(vectors[4], 20)
    assert 5 not in ids and 6 not in ids
    assert len(index) == 18


def test_adding_an_existing_id_replaces_its_vector() -> None:
    index, vectors = filled(10)
    index.add(np.array([3]), vectors[7:8])
    _, ids = index.search(vectors[7], 2)
    assert len(index) == 10
    assert sorted(ids[0].tolist()) == [3, 8]


def test_allowed_ids_restrict_results() -> None:
    index, vectors = filled(100)
    _, ids = index.search(vectors[0], 5, allowed_ids=np.array([40, 41, 999]))
    assert set(ids[0].tolist()) == {40, 41, -1}


def test_restricted_results_are_best_first() -> None:
    index, vectors = filled(100)
    scores, ids = index.search(vectors[0], 3, allowed_ids=np.array([1, 40, 41]))
    assert ids[0, 0] == 1
    assert scores[0, 0] >= scores[0, 1] >= scores[0, 2]


def test_large_index_becomes_ivf_and_still_finds_exact_matches() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    _, ids = index.search(vectors[1234], 1)
    assert index.kind == "ivf"
    assert ids[0, 0] == 1235


def test_ivf_index_supports_removal_and_restriction() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    index.remove(np.array([1235]))
    _, unrestricted = index.search(vectors[1234], 5)
    _, restricted = index.search(vectors[1234], 5, allowed_ids=np.array([7, 8]))
    assert 1235 not in unrestricted
    assert set(restricted[0].tolist()) == {7, 8, -1}


def test_ivf_restriction_larger_than_exact_subset_uses_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "EXACT_SUBSET_MAX", 10)
    index, vectors = filled(3_000, flat_max=1_000)
    allowed = np.arange(1, 1_500)
    _, ids = index.search(vectors[100], 10, allowed_ids=allowed)
    assert ids[0, 0] == 101
    assert set(ids[0].tolist()) <= set(allowed.tolist())


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    index.save(tmp_path / "g.faiss", generation=7)
    loaded, meta = VectorIndex.load(tmp_path / "g.faiss")
    assert (meta.model, meta.dimension, meta.count, meta.generation) == (MODEL, DIM, 3_000, 7)
    assert loaded.kind == "ivf"
    assert loaded.search(vectors[5], 1)[1][0, 0] == 6


def test_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    index, _ = filled(10)
    index.save(tmp_path / "g.faiss", generation=1)
    assert [path.name for path in tmp_path.iterdir()] == ["g.faiss"]


def test_loading_a_corrupted_file_raises(tmp_path: Path) -> None:
    index, _ = filled(10)
    path = tmp_path / "g.faiss"
    index.save(path, generation=1)
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    with pytest.raises(IndexFileError):
        VectorIndex.load(path)


def test_loading_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError, match="does not exist"):
        VectorIndex.load(tmp_path / "absent.faiss")


# -- IndexRegistry: verification against SQLite ----------------------------------------------------------------


async def stored(store: MemoryStore, make_record: RecordFactory, count: int, guild_id: int = 1) -> np.ndarray:
    rowids = list(store.allocate_rowids(count))
    vectors = units(count, seed=guild_id)
    batch = WriteBatch(MODEL, guild_ids={guild_id})
    batch.inserts = [NewRow(rowid, make_record(rowid, f"m{rowid}", guild_id=guild_id), f"m{rowid}", f"m{rowid}",
                            vector) for rowid, vector in zip(rowids, vectors, strict=True)]
    await store.write(batch)
    return np.array(rowids)


async def saved_registry(store: MemoryStore, directory: Path, make_record: RecordFactory) -> IndexRegistry:
    registry = IndexRegistry(store, directory, MODEL, DIM)
    ids = await stored(store, make_record, 30)
    vectors = np.concatenate([page async for _, page in store.iter_embeddings(1, MODEL)])
    await registry.add(1, ids, vectors)
    await registry.close()
    return IndexRegistry(store, directory, MODEL, DIM)


async def test_a_matching_index_is_loaded_without_rebuild(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "Rebuilding" not in caplog.text


async def test_a_deleted_index_file_is_rebuilt_from_sqlite(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).unlink()
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "Rebuilding the vector index of guild 1" in caplog.text
    assert registry.path_for(1).exists()


async def test_a_corrupted_index_file_is_rebuilt_from_sqlite(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).write_bytes(b"\x00garbage" * 100)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "unreadable" in caplog.text


async def test_a_stale_index_is_rebuilt_from_sqlite(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    await stored(store, make_record, 5)  # written after the save, as if the process died before saving again
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 35
    assert "stale" in caplog.text


async def test_same_ids_with_newer_vectors_count_as_stale(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    batch = WriteBatch(MODEL, guild_ids={1})
    new_vector = units(1, seed=99)[0]
    batch.vectors = [(1, new_vector)]
    await store.write(batch)
    await registry.load_all()
    _, ids = await registry.search(1, new_vector, 1)
    assert ids[0, 0] == 1


async def test_an_index_for_another_model_is_rebuilt(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    index, _ = VectorIndex.load(registry.path_for(1))
    index.model = "other-model"
    index.save(registry.path_for(1), generation=1)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert "built for other-model" in caplog.text


async def test_guilds_never_share_an_index(store: MemoryStore, tmp_path: Path, make_record: RecordFactory) -> None:
    registry = IndexRegistry(store, tmp_path, MODEL, DIM)
    await registry.add(1, np.array([1, 2]), units(2, seed=1))
    await registry.add(2, np.array([3]), units(1, seed=2))
    _, ids = await registry.search(1, units(1, seed=2)[0], 5)
    await registry.close()
    assert set(ids[0].tolist()) == {1, 2, -1}


async def test_dropping_a_guild_deletes_its_file(store: MemoryStore, tmp_path: Path, make_record: RecordFactory) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    await registry.load_all()
    await registry.drop(1)
    await registry.close()
    assert not registry.path_for(1).exists()
    assert registry.count(1) == 0


# -- IndexRegistry: paths it cannot write -------------------------------------------------------------------


async def test_an_index_path_that_is_a_folder_is_rebuilt_in_memory(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).unlink()
    registry.path_for(1).mkdir()
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert caplog.messages[-1] == (f"Could not save the vector index of guild 1: a folder is in the way "
                                   f"({registry.path_for(1)}); it is kept in memory, and saved once that works")


async def test_an_index_folder_that_is_a_file_is_rebuilt_in_memory(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await stored(store, make_record, 30)
    (tmp_path / "indexes").write_text("not a folder")
    registry = IndexRegistry(store, tmp_path / "indexes", MODEL, DIM)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    _, ids = await registry.search(1, units(30, seed=1)[4], 1)
    assert ids[0, 0] == 5
    assert caplog.messages[-1] == (f"Could not save the vector index of guild 1: a file is in the way of a folder "
                                   f"({tmp_path / 'indexes'}); it is kept in memory, and saved once that works")


async def test_an_index_that_could_not_be_saved_is_saved_once_the_path_is_free(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).unlink()
    registry.path_for(1).mkdir()
    await registry.load_all()
    registry.path_for(1).rmdir()
    await registry.save_dirty()
    assert VectorIndex.load(registry.path_for(1))[1].count == 30


async def test_closing_with_an_unsavable_index_logs_and_still_closes(
    store: MemoryStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = IndexRegistry(store, tmp_path, MODEL, DIM)
    await registry.add(1, np.array([1, 2]), units(2))
    registry.path_for(1).mkdir()
    with caplog.at_level(logging.WARNING):
        await registry.close()
    assert caplog.messages[-1].startswith("Could not save the vector index of guild 1: a folder is in the way")
    assert caplog.messages[-1].endswith("; the next start rebuilds it from SQLite")
    assert list(tmp_path.glob("*.tmp")) == []
