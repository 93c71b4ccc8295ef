"""The ONNX export runs in a child process: its failures come back as one clear error, nothing half-written stays."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cogs.memory.runtime.export_child import ExportFailed
from cogs.memory.rerank.onnx_export import ensure_export


def test_an_export_that_fails_in_the_child_raises_with_its_output_and_leaves_no_folder(
    tiny_reranker_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken-model"
    shutil.copytree(tiny_reranker_dir, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not a safetensors file")
    root = tmp_path / "onnx"

    with pytest.raises(ExportFailed, match="the ONNX export process exited with 1: .*"):
        ensure_export(root, str(broken), 9693, 2152)
    assert list(root.iterdir()) == []


def test_the_export_is_written_by_another_process(tiny_reranker_dir: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from cogs.memory.rerank import onnx_export

    pids: list[int] = []
    real = onnx_export._write_fp32
    monkeypatch.setattr(onnx_export, "_write_fp32", lambda *args: (pids.append(os.getpid()), real(*args)))

    folder = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    assert pids == [] and json.loads((folder / "export.json").read_text())["variant"] == "fp32"
