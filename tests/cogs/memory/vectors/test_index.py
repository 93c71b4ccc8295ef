"""VectorIndex and IndexRegistry with real FAISS: search, removal, restriction, HNSW, atomic save, verify/rebuild."""

from __future__ import annotations

import logging
from pathlib import Path

import faiss
import numpy as np
import pytest

from cogs.memory.vectors import hnsw
from cogs.memory.vectors import files as index_files
from cogs.memory.vectors import index as vector_index
from cogs.memory.store.sqlite.store import SqliteStore, NewRow, WriteBatch
from cogs.memory.vectors.index import IndexFileError, VectorIndex
from cogs.memory.vectors.registry import IndexRegistry
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


def test_index_is_exact_up_to_flat_max() -> None:
    index, _ = filled(1_000, flat_max=1_000)
    assert index.kind == "flat"


def test_index_becomes_a_graph_beyond_flat_max() -> None:
    index, vectors = filled(1_000, flat_max=1_000)
    index.add(np.array([5_000]), units(1, seed=5))
    assert (index.kind, len(index)) == ("hnsw", 1_001)


def test_graph_finds_exact_matches() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    _, ids = index.search(vectors[1234], 1)
    assert index.kind == "hnsw"
    assert ids[0, 0] == 1235


def test_graph_recall_on_clustered_vectors_is_high() -> None:
    # Real embeddings cluster: points scattered around topics, in 384 dimensions like MiniLM's.
    rng = np.random.default_rng(3)
    topics = rng.standard_normal((60, 384)).astype(np.float32)
    points = topics[rng.integers(0, 60, size=6_000)] + 0.8 * rng.standard_normal((6_000, 384)).astype(np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    queries = topics[rng.integers(0, 60, size=50)] + 0.8 * rng.standard_normal((50, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    index = VectorIndex(384, MODEL, flat_max=1_000)
    index.add(np.arange(6_000), points)
    exact = np.argsort(-(queries @ points.T), axis=1)[:, :10]
    _, found = index.search(queries, 10)
    recall = np.mean([len(set(exact[i]) & set(found[i])) / 10 for i in range(50)])
    assert index.kind == "hnsw"
    assert recall >= 0.95


@pytest.mark.parametrize(("size", "ef"), [(100_000, 384), (100_001, 768), (1_000_000, 768)])
def test_a_larger_graph_keeps_more_candidates(size: int, ef: int) -> None:
    assert hnsw.ef_for(size) == ef


def test_graph_never_returns_removed_ids() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    assert index.remove(np.array([1235, 1236, 99_999])) == 2
    _, ids = index.search(vectors[1234], 20)
    assert 1235 not in ids and 1236 not in ids
    assert len(index) == 2_998


def test_graph_keeps_no_copy_of_a_removed_vector(tmp_path: Path) -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    index.remove(np.array([1235]))
    index.save(tmp_path / "g.faiss", generation=1)
    raw = (tmp_path / "g.faiss").read_bytes()
    assert vectors[1233].tobytes() in raw  # a live neighbour, as a control
    assert vectors[1234].tobytes() not in raw


def test_graph_replaces_the_vector_of_an_existing_id() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    index.add(np.array([3]), vectors[7:8])
    _, near_old = index.search(vectors[2], 1)
    _, near_new = index.search(vectors[7], 2)
    assert len(index) == 3_000
    assert near_old[0, 0] != 3
    assert sorted(near_new[0].tolist()) == [3, 8]


def test_graph_supports_restriction() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    _, restricted = index.search(vectors[1234], 5, allowed_ids=np.array([7, 8]))
    assert set(restricted[0].tolist()) == {7, 8, -1}


def test_graph_restriction_larger_than_exact_subset_uses_selector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vector_index, "EXACT_SUBSET_MAX", 10)
    index, vectors = filled(3_000, flat_max=1_000)
    index.remove(np.array([102]))
    allowed = np.arange(1, 1_500)
    _, ids = index.search(vectors[100], 10, allowed_ids=allowed)
    assert ids[0, 0] == 101
    assert set(ids[0].tolist()) <= set(allowed.tolist()) - {102}


def test_graph_is_rebuilt_without_tombstones_once_half_is_removed() -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    index.remove(np.arange(1, 1_000))
    assert index.tombstones == 999
    index.remove(np.arange(1_000, 1_100))
    _, ids = index.search(vectors[2_000], 1)
    assert (index.kind, index.tombstones, len(index)) == ("hnsw", 0, 1_901)
    assert ids[0, 0] == 2_001


def test_graph_shrunk_to_flat_max_becomes_exact_again() -> None:
    index, _ = filled(3_000, flat_max=1_000)
    index.remove(np.arange(1, 2_001))
    assert (index.kind, len(index)) == ("flat", 1_000)


def test_graph_save_and_load_round_trip(tmp_path: Path) -> None:
    index, vectors = filled(3_000, flat_max=1_000)
    index.remove(np.array([6]))
    index.save(tmp_path / "g.faiss", generation=7)
    loaded, meta = VectorIndex.load(tmp_path / "g.faiss")
    _, ids = loaded.search(vectors[5], 3)
    assert (meta.count, meta.generation, loaded.kind, loaded.tombstones) == (2_999, 7, "hnsw", 1)
    assert 6 not in ids
    assert loaded.search(vectors[9], 1)[1][0, 0] == 10


def test_loaded_graph_takes_new_vectors(tmp_path: Path) -> None:
    index, _ = filled(3_000, flat_max=1_000)
    index.save(tmp_path / "g.faiss", generation=1)
    loaded, _ = VectorIndex.load(tmp_path / "g.faiss")
    extra = units(1, seed=42)
    loaded.add(np.array([9_000]), extra)
    assert loaded.search(extra[0], 1)[1][0, 0] == 9_000


def test_a_graph_saved_with_fewer_link_candidates_links_new_vectors_with_todays(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hnsw, "HNSW_EF_CONSTRUCTION", 40)
    index, _ = filled(3_000, flat_max=1_000)
    index.save(tmp_path / "g.faiss", generation=1)
    monkeypatch.undo()
    arrays = dict(np.load(tmp_path / "g.faiss", allow_pickle=False))
    assert hnsw.HnswGraph.from_arrays(arrays)._index.hnsw.efConstruction == hnsw.HNSW_EF_CONSTRUCTION == 100


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index, vectors = filled(300)
    index.save(tmp_path / "g.faiss", generation=7)
    loaded, meta = VectorIndex.load(tmp_path / "g.faiss")
    assert (meta.model, meta.dimension, meta.count, meta.generation) == (MODEL, DIM, 300, 7)
    assert loaded.kind == "flat"
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


def test_loading_a_flat_file_whose_index_has_no_ids_raises(tmp_path: Path) -> None:
    """A file that says "flat" but holds a bare FAISS index (no id map) is unreadable, and so rebuilt."""
    index, vectors = filled(10)
    index.save(tmp_path / "g.faiss", generation=1)
    header, _ = index_files.read_index_file(tmp_path / "g.faiss")
    bare = faiss.IndexFlatIP(DIM)
    bare.add(vectors)
    index_files.write_index_file(tmp_path / "g.faiss", header, {"index": faiss.serialize_index(bare)})
    with pytest.raises(IndexFileError, match="expected a flat index with ids, found IndexFlatIP"):
        VectorIndex.load(tmp_path / "g.faiss")


def test_loading_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(IndexFileError, match="does not exist"):
        VectorIndex.load(tmp_path / "absent.faiss")


# -- IndexRegistry: verification against SQLite ----------------------------------------------------------------


async def stored(store: SqliteStore, make_record: RecordFactory, count: int, guild_id: int = 1) -> np.ndarray:
    rowids = list(store.allocate_rowids(count))
    vectors = units(count, seed=guild_id)
    batch = WriteBatch(MODEL, guild_ids={guild_id})
    batch.inserts = [NewRow(rowid, make_record(rowid, f"m{rowid}", guild_id=guild_id), f"m{rowid}", f"m{rowid}",
                            vector) for rowid, vector in zip(rowids, vectors, strict=True)]
    await store.write(batch)
    return np.array(rowids)


async def saved_registry(store: SqliteStore, directory: Path, make_record: RecordFactory) -> IndexRegistry:
    registry = IndexRegistry(store, directory, MODEL, DIM)
    ids = await stored(store, make_record, 30)
    vectors = np.concatenate([page async for _, page in store.iter_embeddings(1, MODEL)])
    await registry.add(1, ids, vectors)
    await registry.close()
    return IndexRegistry(store, directory, MODEL, DIM)


async def test_a_matching_index_is_loaded_without_rebuild(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "Rebuilding" not in caplog.text


async def test_a_deleted_index_file_is_rebuilt_from_sqlite(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).unlink()
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "Rebuilding the vector index of guild 1" in caplog.text
    assert registry.path_for(1).exists()


async def test_a_corrupted_index_file_is_rebuilt_from_sqlite(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).write_bytes(b"\x00garbage" * 100)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "unreadable" in caplog.text


async def test_a_stale_index_is_rebuilt_from_sqlite(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    await stored(store, make_record, 5)  # written after the save, as if the process died before saving again
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 35
    assert "stale" in caplog.text


async def test_same_ids_with_newer_vectors_count_as_stale(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory
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
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    index, _ = VectorIndex.load(registry.path_for(1))
    index.model = "other-model"
    index.save(registry.path_for(1), generation=1)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert "built for other-model" in caplog.text


async def test_guilds_never_share_an_index(store: SqliteStore, tmp_path: Path, make_record: RecordFactory) -> None:
    registry = IndexRegistry(store, tmp_path, MODEL, DIM)
    await registry.add(1, np.array([1, 2]), units(2, seed=1))
    await registry.add(2, np.array([3]), units(1, seed=2))
    _, ids = await registry.search(1, units(1, seed=2)[0], 5)
    await registry.close()
    assert set(ids[0].tolist()) == {1, 2, -1}


async def test_dropping_a_guild_deletes_its_file(store: SqliteStore, tmp_path: Path, make_record: RecordFactory) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    await registry.load_all()
    await registry.drop(1)
    await registry.close()
    assert not registry.path_for(1).exists()
    assert registry.count(1) == 0


@pytest.mark.parametrize(("written_after_save", "stale"), [(0, False), (5, True)])
async def test_a_saved_graph_is_loaded_as_saved_unless_it_is_stale(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch, written_after_save: int, stale: bool,
) -> None:
    monkeypatch.setattr(vector_index, "FLAT_MAX", 10)
    registry = await saved_registry(store, tmp_path, make_record)
    if written_after_save:
        await stored(store, make_record, written_after_save)
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert (registry.get(1).kind, registry.count(1)) == ("hnsw", 30 + written_after_save)
    assert ("Rebuilding" in caplog.text, "stale" in caplog.text) == (stale, stale)


async def test_an_index_saved_in_the_previous_format_is_rebuilt(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    index, meta = VectorIndex.load(registry.path_for(1))
    monkeypatch.setattr(index_files, "_FORMAT", 1)
    index.save(registry.path_for(1), meta.generation)
    monkeypatch.undo()
    with caplog.at_level(logging.WARNING):
        await registry.load_all()
    assert registry.count(1) == 30
    assert "has format 1, expected 2" in caplog.text


# -- IndexRegistry: paths it cannot write -------------------------------------------------------------------


async def test_an_index_path_that_is_a_folder_is_rebuilt_in_memory(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
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
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
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
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory
) -> None:
    registry = await saved_registry(store, tmp_path, make_record)
    registry.path_for(1).unlink()
    registry.path_for(1).mkdir()
    await registry.load_all()
    registry.path_for(1).rmdir()
    await registry.save_dirty()
    assert VectorIndex.load(registry.path_for(1))[1].count == 30


async def test_closing_with_an_unsavable_index_logs_and_still_closes(
    store: SqliteStore, tmp_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    registry = IndexRegistry(store, tmp_path, MODEL, DIM)
    await registry.add(1, np.array([1, 2]), units(2))
    registry.path_for(1).mkdir()
    with caplog.at_level(logging.WARNING):
        await registry.close()
    assert caplog.messages[-1].startswith("Could not save the vector index of guild 1: a folder is in the way")
    assert caplog.messages[-1].endswith("; the next start rebuilds it from SQLite")
    assert list(tmp_path.glob("*.tmp")) == []
