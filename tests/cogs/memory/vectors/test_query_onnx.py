"""The query embedder on ONNX Runtime (cogs/memory/vectors/query_onnx.py): exported once by a child process, whole or not at
all, checked against the model at load, and left for the TorchScript trace whenever the export cannot be used.
The real packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.vectors import query_onnx
from cogs.memory.vectors.embedding import EmbeddingService, resolve_model_path
from cogs.memory.vectors.query_onnx import GRAPH_FILE, QueryOnnx, export_folder
from cogs.memory.vectors.query_trace import PROBES, QueryTrace, eager_embedding
from cogs.memory.runtime.export_child import STAGING_SUFFIX
from cogs.memory.runtime.export_manifest import MANIFEST, write_manifest

SOURCE = resolve_model_path("all-MiniLM-L6-v2")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, embedder: EmbeddingService) -> Iterator[Path]:
    """An ONNX folder holding MiniLM's export (written by the child process once for this module)."""
    root = tmp_path_factory.mktemp("onnx")
    assert QueryOnnx.load(SOURCE, embedder._model, root) is not None
    yield root


def test_the_export_is_one_whole_folder(exported: Path) -> None:
    folder = export_folder(exported, SOURCE)
    assert [path.name for path in exported.iterdir()] == [folder.name]  # no staging folder left behind
    assert (folder / GRAPH_FILE).stat().st_size > 10_000_000  # MiniLM's weights are in the graph


def test_the_export_is_private(exported: Path) -> None:
    folder = export_folder(exported, SOURCE)
    assert {path.name: path.stat().st_mode & 0o777 for path in [folder, *folder.iterdir()]} == {
        folder.name: 0o700, GRAPH_FILE: 0o600, MANIFEST: 0o600}


@pytest.mark.parametrize("text", [*PROBES, "Caroline什么时候去参加LGBTQ支持小组的？", "x" * 2000])
def test_onnx_runtime_gives_the_models_own_vectors(exported: Path, embedder: EmbeddingService, text: str) -> None:
    runner = QueryOnnx.load(SOURCE, embedder._model, exported)
    assert runner is not None
    np.testing.assert_allclose(runner.embed(text).numpy(), eager_embedding(embedder._model, text).numpy(), atol=1e-4)


async def test_a_cpu_service_with_an_onnx_folder_embeds_queries_on_onnx_runtime(exported: Path,
                                                                                embedder: EmbeddingService) -> None:
    service = EmbeddingService("all-MiniLM-L6-v2", onnx_dir=exported)
    await service.start()
    try:
        assert isinstance(service._query_runner, QueryOnnx)
        question = ["when did Caroline go to the support group?"]
        np.testing.assert_allclose(await service.embed_queries(question), embedder.embed_sync(question), atol=1e-5)
    finally:
        await service.close()


def test_an_export_runtime_cannot_load_leaves_queries_on_the_trace(tmp_path: Path, embedder: EmbeddingService,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = export_folder(tmp_path, SOURCE)
    folder.mkdir()
    (folder / GRAPH_FILE).write_bytes(b"not a graph")  # whole as its manifest says, and still no graph
    write_manifest(folder, query_onnx.export_fields(SOURCE))
    monkeypatch.setattr(query_onnx, "_SESSIONS", {})
    service = EmbeddingService("all-MiniLM-L6-v2", onnx_dir=tmp_path)
    service.load()
    try:
        assert isinstance(service._query_runner, QueryTrace)
    finally:
        service.shutdown()


def test_a_failed_export_writes_nothing_and_leaves_queries_on_torch(tmp_path: Path,
                                                                   embedder: EmbeddingService) -> None:
    # The child cannot load a model from a folder that holds none: it fails, and nothing is left in the root.
    missing = str(tmp_path / "no-such-model")
    assert QueryOnnx.load(missing, embedder._model, tmp_path / "onnx") is None
    assert not (tmp_path / "onnx").exists() or not any((tmp_path / "onnx").iterdir())


@pytest.fixture
def count_exports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models whose export a child process was started for during the test (a spy around the real one)."""
    started: list[str] = []
    real = query_onnx.run_export

    def spy(module: str, args: list[str], logger: object) -> None:
        started.append(args[0])
        real(module, args, logger)

    monkeypatch.setattr(query_onnx, "run_export", spy)
    return started


def test_a_complete_export_is_reused_without_exporting_again(exported: Path, embedder: EmbeddingService,
                                                            count_exports: list[str]) -> None:
    assert QueryOnnx.load(SOURCE, embedder._model, exported) is not None
    assert count_exports == []


def test_what_a_killed_export_left_is_removed_and_the_export_written_again(
    tmp_path: Path, embedder: EmbeddingService, count_exports: list[str]
) -> None:
    folder = export_folder(tmp_path, SOURCE)
    leftover = tmp_path / f".{folder.name}.killed{STAGING_SUFFIX}"  # the child was killed while writing it
    leftover.mkdir()
    (leftover / GRAPH_FILE).write_bytes(b"\x08\x07 half a graph")
    assert QueryOnnx.load(SOURCE, embedder._model, tmp_path) is not None
    assert (count_exports, [path.name for path in tmp_path.iterdir()]) == ([SOURCE], [folder.name])


@pytest.mark.parametrize("damage", ["overwritten", "truncated", "no manifest"])
def test_a_damaged_export_is_found_said_once_and_exported_again(
    damage: str, exported: Path, tmp_path: Path, embedder: EmbeddingService, count_exports: list[str],
    caplog: pytest.LogCaptureFixture
) -> None:
    folder = export_folder(tmp_path, SOURCE)
    shutil.copytree(export_folder(exported, SOURCE), folder)
    graph = folder / GRAPH_FILE
    size = graph.stat().st_size
    if damage == "overwritten":
        with graph.open("r+b") as fh:
            fh.seek(size // 2)
            fh.write(bytes(4096))
    elif damage == "truncated":
        with graph.open("r+b") as fh:
            fh.truncate(size // 2)
    else:
        (folder / MANIFEST).unlink()  # written by an older version, or cut short
    with caplog.at_level(logging.WARNING):
        runner = QueryOnnx.load(SOURCE, embedder._model, tmp_path)
    assert runner is not None and count_exports == [SOURCE]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    what = {"overwritten": f"{GRAPH_FILE} does not match its", "truncated": f"{GRAPH_FILE} is {size // 2:,} bytes",
            "no manifest": "has no manifest"}[damage]
    assert warning.startswith(f"Query embedder export {folder} {what}")
    np.testing.assert_allclose(runner.embed(PROBES[0]).numpy(), eager_embedding(embedder._model, PROBES[0]).numpy(),
                               atol=1e-4)
