"""The int8 export a VNNI CPU gets is the block-wise one (MatMulNBits: 8-bit weights in blocks of 32, int8
activations per block), a variant of its own with its own manifest settings, and the precision selection loads it
as "int8" and measures it against float32 like any other precision."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest

from cogs.memory.rerank import onnx_export as _onnx_export
from cogs.memory.rerank.fidelity import FidelityBars
from cogs.memory.rerank.onnx_blockwise import BlockwiseSettings, quantize_blockwise
from cogs.memory.rerank.onnx_export import ensure_export, variant_settings
from cogs.memory.rerank.onnx_graph import HEAD_NODE
from cogs.memory.rerank.precision import cache_path, choose, key_fields, measure
from cogs.memory.rerank.scorers import LocalBackend, precision_scorer
from cogs.memory.runtime.hardware import HardwareInfo

VNNI = ("avx2", "avx512f", "avx512_vnni")


def _attributes(node: onnx.NodeProto) -> dict[str, int]:
    return {a.name: a.i for a in node.attribute}


def test_a_vnni_cpu_gets_the_blockwise_export_with_its_own_variant_and_settings(
        tiny_reranker_dir: Path, tmp_path: Path) -> None:
    blockwise = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152, int8=True, cpu_features=VNNI)
    seven_bit = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152, int8=True, cpu_features=("avx2",))
    manifest = json.loads((blockwise / "export.json").read_text())
    assert blockwise.name.endswith("-int8-b32") and blockwise != seven_bit
    assert manifest["variant"] == "int8-b32" and manifest["settings"] == {
        "opset": 17, "quantization": "block-wise weights (MatMulNBits), symmetric", "weight_bits": 8,
        "block_size": 32, "accuracy_level": 4, "quantized_ops": ["MatMul"], "kept_float32": [HEAD_NODE]}
    assert json.loads((seven_bit / "export.json").read_text())["settings"]["quantization"] != \
        manifest["settings"]["quantization"]
    graph = onnx.load(str(blockwise / "model.onnx"), load_external_data=False).graph
    quantized = [n for n in graph.node if n.op_type == "MatMulNBits"]
    # 2 layers x (qkv, o, gate_up, down); the attention products and the yes/no head stay MatMul
    assert len(quantized) == 8 and all(n.domain == "com.microsoft" for n in quantized)
    assert all(_attributes(n)["bits"] == 8 and _attributes(n)["block_size"] == 32
               and _attributes(n)["accuracy_level"] == 4 for n in quantized)
    assert [n.op_type for n in graph.node if n.name == HEAD_NODE] == ["MatMul"]


def test_unsupported_blockwise_settings_are_refused(onnx_export_root: Path, tmp_path: Path) -> None:
    for settings in (BlockwiseSettings(bits=2), BlockwiseSettings(block_size=24), BlockwiseSettings(block_size=8)):
        with pytest.raises(ValueError, match="unsupported block-wise settings"):
            quantize_blockwise(onnx_export_root, tmp_path, settings, keep=[])


def test_selection_measures_the_blockwise_export_as_int8_against_float32(
        tiny_reranker_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hardware = HardwareInfo(cpu_cores=2, ram_gb=8.0, cpu_bf16=False, cpu_features=VNNI)
    monkeypatch.setattr(_onnx_export.HardwareDetector, "detect", lambda self: hardware)
    loaded: list[str] = []

    def build(precision: str) -> LocalBackend | str:
        scorer = precision_scorer(precision, str(tiny_reranker_dir), backend="onnx", max_length=512,
                                  export_root=tmp_path, hardware=hardware)
        loaded.append(getattr(scorer, "export_dir", Path("?")).name)
        return scorer

    instruction = "Given a query, find the relevant message"
    measurements = measure(build, ["int8", "float32"], instruction, 8)
    by = {m.precision: m for m in measurements}
    assert any(name.endswith("-int8-b32") for name in loaded) and any(name.endswith("-fp32") for name in loaded)
    fidelity = by["int8"].fidelity
    assert fidelity is not None and 0 < fidelity.max_abs_diff and by["int8"].pairs_per_s > 0
    # On the tiny model the block-wise export keeps float32's order within every bar; the choice is then by speed.
    assert FidelityBars().misses(fidelity) == []
    choice = choose(measurements, FidelityBars())
    assert "int8" not in choice.rejected


def test_a_precision_measured_on_another_int8_export_is_not_reused(tmp_path: Path) -> None:
    fields = key_fields("m", "r", VNNI, 2, ["int8", "float32"], FidelityBars(), "onnx")
    assert fields["int8_export"] == {"variant": "int8-b32", **variant_settings("int8-b32")}
    before = {**fields, "int8_export": {"variant": "int8", **variant_settings("int8-w7"), "weight_bits": 8}}  # the
    # dynamic 8-bit export VNNI CPUs got before
    assert cache_path(tmp_path, fields) != cache_path(tmp_path, before)
    without_vnni = key_fields("m", "r", ("avx2",), 2, ["int8", "float32"], FidelityBars(), "onnx")
    assert without_vnni["int8_export"] == {"variant": "int8-w7", **variant_settings("int8-w7")}


def test_an_upgrade_removes_the_retired_dynamic_int8_export_and_nothing_else(
        tiny_reranker_dir: Path, tmp_path: Path) -> None:
    fp32 = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    prefix = fp32.name.removesuffix("fp32")
    retired = tmp_path / f"{prefix}int8"  # what a VNNI CPU got before the block-wise export
    other_revision = tmp_path / fp32.name.replace(prefix.split("-")[-2], "0" * 12)
    other_model = tmp_path / "someone--else-0123456789ab-int8"
    for folder in (retired, other_revision, other_model):
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"old")
    again = ensure_export(tmp_path, str(tiny_reranker_dir), 9693, 2152)
    assert again == fp32 and (fp32 / "model.onnx").stat().st_size > 3
    assert not retired.exists() and other_revision.exists() and other_model.exists()
