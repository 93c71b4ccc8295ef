"""Block-wise weight quantization of an fp32 ONNX export: every MatMul with a constant 2-D weight (but those named in
`keep`) becomes ONNX Runtime's `MatMulNBits` (com.microsoft), its weight stored in `bits`-bit integers with one fp32
scale per `block_size` consecutive input rows of each output column (symmetric: no zero points). With
`accuracy_level` 4 the CPU kernels (MLAS) quantize the activations to int8 per block as well and multiply with
VNNI / AVX-512 dot products: one scale per 32 values instead of `quantize_dynamic`'s one per tensor, which is what
keeps the scores close to fp32 (docs/reranker.md, "Precision").

The weights are packed by ONNX Runtime's own C++ routines (`quantize_matmul_8bits` / `_4bits`, what its
MatMulNBitsQuantizer calls); that quantizer itself is not used because it needs the `onnx_ir` package."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .onnx_graph import GRAPH_FILE, WEIGHTS_FILE


@dataclass(frozen=True, slots=True)
class BlockwiseSettings:
    """How a block-wise export is made; `as_dict` is what its manifest records."""

    bits: int = 8
    block_size: int = 32
    accuracy_level: int = 4  # 4: int8 activations, per block (MatMulNBits' attribute)

    def as_dict(self) -> dict[str, object]:
        return {"quantization": "block-wise weights (MatMulNBits), symmetric", "weight_bits": self.bits,
                "block_size": self.block_size, "accuracy_level": self.accuracy_level}


def _pack(weight: np.ndarray, settings: BlockwiseSettings) -> tuple[np.ndarray, np.ndarray]:
    """`weight` [K, N] as MatMulNBits wants it: packed integers [N, K / block, block * bits / 8] and scales
    [N, K / block]; K is padded with zeros to whole blocks."""
    from onnxruntime.capi._pybind_state import quantize_matmul_4bits, quantize_matmul_8bits

    rows, cols = weight.shape
    block = settings.block_size
    blocks = -(-rows // block)
    padded = np.zeros((blocks * block, cols), np.float32)
    padded[:rows] = weight
    per_byte = 8 // settings.bits
    packed = np.zeros((cols, blocks, -(-block // per_byte)), np.uint8)
    scales = np.zeros((cols, blocks), np.float32)
    zero_points = np.zeros((cols, -(-blocks // per_byte)), np.uint8)  # written but unused: symmetric
    quantize = quantize_matmul_8bits if settings.bits == 8 else quantize_matmul_4bits
    quantize(packed, padded, scales, zero_points, block, cols, rows, True)
    return packed, scales


def quantize_blockwise(source: Path, target: Path, settings: BlockwiseSettings, keep: Collection[str]) -> list[str]:
    """Write `target/model.onnx` + `weights.bin`: the export in `source` with its constant-weight MatMuls
    block-quantized, those named in `keep` left fp32. Returns the names of the nodes quantized."""
    import onnx
    from onnx import helper, numpy_helper

    if settings.bits not in (4, 8) or settings.block_size < 16 or settings.block_size & (settings.block_size - 1):
        raise ValueError(f"unsupported block-wise settings {settings}")
    model = onnx.load(str(source / GRAPH_FILE), load_external_data=True)
    graph = model.graph
    initializers: dict[str, Any] = {t.name: t for t in graph.initializer}
    nodes, done = [], []
    for node in graph.node:
        weight = initializers.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or node.name in keep or len(weight.dims) != 2:
            nodes.append(node)
            continue
        rows, cols = weight.dims
        packed, scales = _pack(numpy_helper.to_array(weight).astype(np.float32), settings)
        graph.initializer.remove(initializers.pop(weight.name))
        graph.initializer.extend([numpy_helper.from_array(packed, f"{weight.name}.q{settings.bits}"),
                                  numpy_helper.from_array(scales, f"{weight.name}.scales")])
        nodes.append(helper.make_node("MatMulNBits", [node.input[0], f"{weight.name}.q{settings.bits}",
                                                      f"{weight.name}.scales"], list(node.output), name=node.name,
                                      domain="com.microsoft", K=rows, N=cols, bits=settings.bits,
                                      block_size=settings.block_size, accuracy_level=settings.accuracy_level))
        done.append(node.name)
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    target.mkdir(parents=True, exist_ok=True)
    (target / WEIGHTS_FILE).unlink(missing_ok=True)  # onnx appends external data to an existing file
    onnx.save_model(model, str(target / GRAPH_FILE), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=WEIGHTS_FILE, size_threshold=1024)
    return done
