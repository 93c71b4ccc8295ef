"""The OpenVINO reranker backend on the tiny random Qwen3 (real tokenizer): in float32 it is the official method; in
bf16 and on the block-wise int8 export it stays within the fidelity bars of float32; and where OpenVINO does not
import, the precisions that need it are skipped with the reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cogs.memory.rerank import onnx_export as _onnx_export
from cogs.memory.rerank.calibration import CALIBRATION
from cogs.memory.rerank.fidelity import FidelityBars, measure_fidelity
from cogs.memory.rerank.openvino import OpenVinoScorer
from cogs.memory.rerank.onnx import OnnxScorer
from cogs.memory.rerank.scorers import import_error, precision_scorer
from cogs.memory.runtime.hardware import HardwareInfo
from tests.cogs.memory.rerank.test_service import DOCS, INSTRUCTION, QUERY, official_scores

pytestmark = pytest.mark.skipif(import_error("openvino") is not None, reason=f"OpenVINO: {import_error('openvino')}")
VNNI = ("avx2", "avx512f", "avx512_vnni")


def _calibration_scores(scorer: OnnxScorer) -> list[list[float]]:
    return [[s if s is not None else float("nan") for s in scorer.score(query, list(docs), INSTRUCTION, 4)]
            for query, docs in CALIBRATION]


def test_openvino_in_float32_equals_the_official_method(tiny_reranker_dir: Path, onnx_export_root: Path) -> None:
    scorer = OpenVinoScorer(str(tiny_reranker_dir), 512, onnx_export_root, compute="float32")
    scores = scorer.score(QUERY, DOCS, INSTRUCTION, batch_size=3)
    official = official_scores(tiny_reranker_dir, QUERY, DOCS, INSTRUCTION, 512)
    assert scorer.backend == "openvino" and scorer.dtype == "float32"
    assert max(abs(a - b) for a, b in zip(scores, official, strict=True)) <= 1e-4


def test_openvino_bf16_and_int8_stay_within_the_fidelity_bars(
        tiny_reranker_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hardware = HardwareInfo(cpu_cores=2, ram_gb=8.0, cpu_bf16=True, cpu_features=VNNI)
    monkeypatch.setattr(_onnx_export.HardwareDetector, "detect", lambda self: hardware)
    reference = _calibration_scores(OnnxScorer(str(tiny_reranker_dir), 512, tmp_path))
    for precision in ("openvino-bf16", "openvino-int8"):
        scorer = precision_scorer(precision, str(tiny_reranker_dir), backend="onnx", max_length=512,
                                  export_root=tmp_path, hardware=hardware)
        assert isinstance(scorer, OpenVinoScorer), scorer
        fidelity = measure_fidelity(reference, _calibration_scores(scorer))
        assert not FidelityBars().misses(fidelity), (precision, fidelity)
        assert 0 < fidelity.max_abs_diff, "a lower precision that equals float32 to the bit did not run lower"
        scorer.close()
    int8_export = next(p for p in tmp_path.iterdir() if p.name.endswith("-int8-b32"))
    assert (int8_export / "model.onnx").exists()


def test_without_native_bf16_or_room_for_its_compile_openvino_bf16_is_skipped(
        tiny_reranker_dir: Path, tmp_path: Path) -> None:
    no_bf16 = HardwareInfo(cpu_cores=2, ram_gb=8.0, cpu_bf16=False, cpu_features=("avx2",))
    small = HardwareInfo(cpu_cores=2, ram_gb=4.0, cpu_bf16=True, cpu_features=VNNI)
    reasons = [precision_scorer(precision, str(tiny_reranker_dir), backend="onnx", max_length=512,
                                export_root=tmp_path, hardware=hardware)
               for precision, hardware in (("openvino-bf16", no_bf16), ("openvino-bf16", small))]
    assert isinstance(reasons[0], str) and "no native bf16" in reasons[0]
    assert isinstance(reasons[1], str) and "4.0 GB of RAM (it needs 8.0)" in reasons[1]


def test_without_openvino_its_precisions_are_skipped_with_the_reason(
        tiny_reranker_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openvino", None)  # makes importing openvino raise ImportError
    hardware = HardwareInfo(cpu_cores=2, ram_gb=8.0, cpu_bf16=True, cpu_features=VNNI)
    for precision in ("openvino-bf16", "openvino-int8"):
        reason = precision_scorer(precision, str(tiny_reranker_dir), backend="onnx", max_length=512,
                                  export_root=tmp_path, hardware=hardware)
        assert isinstance(reason, str) and "OpenVINO is not available" in reason
    torch_only = precision_scorer("openvino-bf16", str(tiny_reranker_dir), backend="torch", max_length=512,
                                  export_root=tmp_path, hardware=hardware)
    assert isinstance(torch_only, str) and "torch" in torch_only
