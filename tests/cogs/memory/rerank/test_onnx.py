"""The ONNX Runtime reranker backend on the tiny random Qwen3 (real tokenizer): exactness, the export folder, int8,
and the fallback to torch."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import onnx
import pytest

from cogs.memory.rerank import onnx_export as _onnx_export
from cogs.memory.runtime.export_child import STAGING_SUFFIX
from cogs.memory.rerank.onnx_export import ensure_export
from cogs.memory.rerank.local import LocalScorer
from cogs.memory.rerank.onnx import OnnxScorer
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.rerank.service import RerankerService
from tests.cogs.memory.rerank.test_service import DOCS, INSTRUCTION, QUERY, candidates, official_scores
from tests.fixtures.reranker import rerank_results, with_reranker


@pytest.fixture(scope="module")
def onnx_scorer(tiny_reranker_dir: Path, onnx_export_root: Path) -> OnnxScorer:
    return OnnxScorer(str(tiny_reranker_dir), 512, onnx_export_root)


@pytest.fixture
def count_exports(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every fp32 export written during the test (a spy around the real one)."""
    exported: list[str] = []
    real = _onnx_export._export_fp32

    def spy(model_name: str, *args: object) -> None:
        exported.append(model_name)
        real(model_name, *args)

    monkeypatch.setattr(_onnx_export, "_export_fp32", spy)
    return exported


def max_diff(a: list[float | None], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=True))


def test_onnx_equals_the_official_method(onnx_scorer: OnnxScorer, tiny_reranker_dir: Path) -> None:
    scores = onnx_scorer.score(QUERY, DOCS, INSTRUCTION, batch_size=3)
    assert max_diff(scores, official_scores(tiny_reranker_dir, QUERY, DOCS, INSTRUCTION, 512)) <= 1e-5


def test_onnx_equals_the_official_method_across_token_capped_packs(
    onnx_scorer: OnnxScorer, tiny_reranker_dir: Path
) -> None:
    docs = [f"message {i}: " + "a long rambling story about the weekend " * (20 + 5 * i) for i in range(4)]
    assert sum(len(t) for t in onnx_scorer.split_prompts(QUERY, docs, INSTRUCTION).tails) > \
        onnx_scorer.max_pack_tokens
    scores = onnx_scorer.score(QUERY, docs, INSTRUCTION, batch_size=4)
    assert max_diff(scores, official_scores(tiny_reranker_dir, QUERY, docs, INSTRUCTION, 512)) <= 1e-5


def test_the_export_holds_only_the_yes_and_no_rows_of_the_head(onnx_scorer: OnnxScorer) -> None:
    graph = onnx.load(str(onnx_scorer.export_dir / "model.onnx"), load_external_data=False).graph
    head = next(init for init in graph.initializer if init.name == "head_no_yes")
    assert list(head.dims) == [64, 2] and [out.name for out in graph.output][0] == "logits"


def test_the_export_is_private(onnx_scorer: OnnxScorer) -> None:
    folder = onnx_scorer.export_dir
    assert {path.name: path.stat().st_mode & 0o777 for path in [folder, *folder.iterdir()]} == {
        folder.name: 0o700, "model.onnx": 0o600, "weights.bin": 0o600, "export.json": 0o600}


def test_export_is_reused_on_the_second_load(
    tiny_reranker_dir: Path, tmp_path: Path, count_exports: list[str]
) -> None:
    first = OnnxScorer(str(tiny_reranker_dir), 512, tmp_path)
    second = OnnxScorer(str(tiny_reranker_dir), 512, tmp_path)
    assert count_exports == [str(tiny_reranker_dir)] and second.export_dir == first.export_dir


def test_export_folder_is_keyed_by_model_revision_and_dtype(
    tiny_reranker_dir: Path, onnx_export_root: Path
) -> None:
    revision = _onnx_export.model_revision(str(tiny_reranker_dir))
    fp32 = ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152)
    int8 = ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152, int8=True, cpu_features=("avx2",))
    assert fp32.name.endswith(f"--{tiny_reranker_dir.name}-{revision[:12]}-fp32")
    assert int8.name == fp32.name.removesuffix("fp32") + "int8-w7"


def test_int8_has_8_bit_weights_only_where_the_cpu_has_vnni(tiny_reranker_dir: Path, onnx_export_root: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="cogs.memory.rerank.onnx_export"):
        vnni = ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152, int8=True,
                             cpu_features=("avx2", "avx_vnni"))
    assert vnni.name.endswith("-int8-b32") and "block-wise: 8-bit weights in blocks of 32" in caplog.text


def test_changed_weights_mean_a_new_export_folder(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "qwen3"}')
    (model / "model.safetensors").write_bytes(b"x" * 10)
    before = _onnx_export.model_revision(str(model))
    (model / "model.safetensors").write_bytes(b"y" * 11)
    assert _onnx_export.model_revision(str(model)) != before


def test_a_half_written_export_is_ignored_and_written_again(
    tiny_reranker_dir: Path, tmp_path: Path, onnx_export_root: Path, count_exports: list[str]
) -> None:
    complete = ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152)
    broken = tmp_path / complete.name
    broken.mkdir()
    (broken / "model.onnx").write_bytes((complete / "model.onnx").read_bytes())
    (broken / "weights.bin").write_bytes((complete / "weights.bin").read_bytes()[:1000])  # cut short, no manifest
    scorer = OnnxScorer(str(tiny_reranker_dir), 512, tmp_path)
    assert count_exports == [str(tiny_reranker_dir)]
    assert max_diff(scorer.score(QUERY, DOCS[:3], INSTRUCTION, 3),
                    official_scores(tiny_reranker_dir, QUERY, DOCS[:3], INSTRUCTION, 512)) <= 1e-5


def test_an_export_with_a_truncated_file_is_not_complete(tiny_reranker_dir: Path, tmp_path: Path,
                                                        count_exports: list[str]) -> None:
    folder = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    with (folder / "weights.bin").open("r+b") as fh:
        fh.truncate(4096)
    ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    assert len(count_exports) == 2


def overwrite_middle(path: Path, size: int = 4096) -> None:
    """Overwrite ``size`` bytes in the middle of ``path`` with other bytes (a bad sector, a stray write)."""
    with path.open("r+b") as fh:
        fh.seek(path.stat().st_size // 2)
        old = fh.read(size)
        fh.seek(-len(old), 1)
        fh.write(bytes(b ^ 0xFF for b in old))


@pytest.fixture(scope="module")
def fresh_scores(onnx_scorer: OnnxScorer) -> list[float | None]:
    """What a freshly exported model scores for DOCS."""
    return onnx_scorer.score(QUERY, DOCS, INSTRUCTION, batch_size=3)


@pytest.mark.parametrize("damage", ["overwritten", "truncated"])
def test_a_damaged_export_is_found_said_once_and_exported_again(
    damage: str, tiny_reranker_dir: Path, tmp_path: Path, count_exports: list[str], fresh_scores: list[float | None],
    caplog: pytest.LogCaptureFixture
) -> None:
    weights = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152) / "weights.bin"
    size = weights.stat().st_size
    if damage == "overwritten":
        overwrite_middle(weights)
    else:
        with weights.open("r+b") as fh:
            fh.truncate(size - 4096)
    with caplog.at_level(logging.WARNING):
        scorer = OnnxScorer(str(tiny_reranker_dir), 512, tmp_path)
    problem = {"overwritten": "weights.bin does not match its",
               "truncated": f"weights.bin is {size - 4096:,} bytes, the export wrote {size:,}"}[damage]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.startswith(f"ONNX export {scorer.export_dir} {problem}")
    assert warning.endswith("; removing it and exporting it again (the reranker keeps first-stage order meanwhile)")
    assert count_exports == [str(tiny_reranker_dir)] * 2
    assert scorer.score(QUERY, DOCS, INSTRUCTION, batch_size=3) == fresh_scores


def test_an_export_loads_without_hashing_its_weights_whole(
    tiny_reranker_dir: Path, onnx_export_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogs.memory.runtime import export_manifest

    folder = ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152)
    hashed: list[str] = []
    real = export_manifest.full_sha256
    monkeypatch.setattr(export_manifest, "full_sha256", lambda path: (hashed.append(path.name), real(path))[1])
    assert ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152) == folder
    assert hashed == []  # sizes, modification times and sampled blocks only: a start reads a few MiB


def test_an_export_written_by_an_older_version_without_checksums_is_exported_again(
    tiny_reranker_dir: Path, tmp_path: Path, count_exports: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    folder = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    manifest = json.loads((folder / "export.json").read_text())
    manifest["files"] = {name: entry["size"] for name, entry in manifest["files"].items()}  # sizes only, as before
    del manifest["settings"]
    (folder / "export.json").write_text(json.dumps(manifest))
    with caplog.at_level(logging.WARNING):
        ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    assert len(count_exports) == 2 and "was made with other settings" in caplog.text


def test_what_a_killed_export_left_is_removed_and_a_complete_export_reused(
    tiny_reranker_dir: Path, tmp_path: Path, count_exports: list[str]
) -> None:
    spec = _onnx_export.ExportSpec(str(tiny_reranker_dir), _onnx_export.model_revision(str(tiny_reranker_dir)),
                                   "fp32", 9693, 2152)
    leftover = tmp_path / f".{spec.folder}.killed{STAGING_SUFFIX}"  # the export was killed while writing it
    leftover.mkdir()
    (leftover / "weights.bin").write_bytes(b"\0" * 1000)
    folder = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    assert ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152) == folder  # the second start reuses it
    assert (count_exports, [path.name for path in tmp_path.iterdir()]) == ([str(tiny_reranker_dir)], [spec.folder])


def test_no_temporary_folder_is_left_behind(tiny_reranker_dir: Path, tmp_path: Path) -> None:
    ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_int8_runs_and_stays_close_to_fp32(
    onnx_scorer: OnnxScorer, tiny_reranker_dir: Path, onnx_export_root: Path
) -> None:
    int8 = OnnxScorer(str(tiny_reranker_dir), 512, onnx_export_root, int8=True)
    fp32_scores = onnx_scorer.score(QUERY, DOCS, INSTRUCTION, 3)
    int8_scores = int8.score(QUERY, DOCS, INSTRUCTION, 3)
    assert 0 < max_diff(int8_scores, fp32_scores) <= 0.05


@pytest.mark.parametrize(("cpu_features", "int8_ops"), [(("avx2",), {"DynamicQuantizeMatMul", "MatMulInteger"}),
                                                       (("avx2", "avx512_vnni"), {"MatMulNBits"})])
def test_int8_export_multiplies_int8_weights(tiny_reranker_dir: Path, onnx_export_root: Path,
                                             cpu_features: tuple[str, ...], int8_ops: set[str]) -> None:
    folder = ensure_export(onnx_export_root, str(tiny_reranker_dir), 9693, 2152, int8=True, cpu_features=cpu_features)
    ops = {node.op_type for node in onnx.load(str(folder / "model.onnx"), load_external_data=False).graph.node}
    assert int8_ops & ops


@pytest.fixture
def onnx_profile(tiny_reranker_profile: MemoryProfile) -> MemoryProfile:
    return with_reranker(tiny_reranker_profile, backend="auto")


def test_auto_runs_onnx_on_the_cpu(onnx_profile: MemoryProfile, onnx_export_root: Path) -> None:
    service = RerankerService(onnx_profile, export_dir=onnx_export_root)
    try:
        results = rerank_results(service, QUERY, candidates(), top_k=None, instruction=INSTRUCTION)
        status = service.status()
    finally:
        service.close()
    assert (status.backend, status.dtype) == ("onnx", "float32")
    assert all(r.rerank_score is not None for r in results)


def test_int8_profile_option_loads_the_int8_export(onnx_profile: MemoryProfile, onnx_export_root: Path) -> None:
    service = RerankerService(with_reranker(onnx_profile, int8=True), export_dir=onnx_export_root)
    try:
        rerank_results(service, QUERY, candidates())
        status = service.status()
    finally:
        service.close()
    assert (status.backend, status.dtype) == ("onnx", "int8")


def test_falls_back_to_torch_when_onnx_runtime_cannot_be_imported(
    onnx_profile: MemoryProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` raise ImportError
    service = RerankerService(with_reranker(onnx_profile, backend="onnx"), export_dir=tmp_path)
    try:
        results = rerank_results(service, QUERY, candidates(), top_k=None, instruction=INSTRUCTION)
        status, backend = service.status(), type(service._backend)
    finally:
        service.close()
    assert status.backend == "torch" and backend is LocalScorer
    assert all(r.rerank_score is not None for r in results) and list(tmp_path.iterdir()) == []


def test_int8_quantization_logs_a_start_and_an_end_line_only(
    tiny_reranker_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    with caplog.at_level(logging.INFO):
        ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152, int8=True)
    assert [r.getMessage().split(" ")[:2] for r in caplog.records if r.levelno < logging.WARNING] == [
        ["quantizing", "ONNX"], ["int8", "quantization"]]
