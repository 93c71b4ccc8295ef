"""Qwen3-Reranker on OpenVINO (CPU): the ONNX scorer's export, prompts and packing, with the graph compiled by
OpenVINO instead of run by ONNX Runtime. OpenVINO fuses the decoder's element-wise operators (norms, rotary
embeddings, SiLU) into its matrix products and runs them in bfloat16 where the CPU has native bf16 (avx512_bf16,
amx_bf16), the inference precision this scorer asks for; it reads the block-wise int8 export as weights it
decompresses on the fly. docs/reranker.md, "Precision", has what each measured against float32."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .onnx import GraphSession, OnnxScorer

log = logging.getLogger(__name__)

# OpenVINO's names for the precisions its CPU plugin computes in.
INFERENCE_PRECISION = {"bf16": "bf16", "float32": "f32"}


class OpenVinoSession:
    """The exported graph compiled for the CPU by OpenVINO, one inference request reused (one owner thread)."""

    def __init__(self, graph: Path, threads: int, compute: str) -> None:
        import openvino as ov

        # LATENCY: one stream for one request at a time, all `threads` on it. No pinning: the bot's event loop and
        # the embedder share these cores.
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": INFERENCE_PRECISION[compute],
                                  "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
                                  "ENABLE_CPU_PINNING": False}
        # Compiled from the file, not from a model read first: OpenVINO then maps the weights as it compiles (the
        # float32 export loads in 3.6 s against 22.8 s, measured on the real shape; the peak RSS is the same).
        self._compiled = ov.Core().compile_model(str(graph), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._shapes: dict[str, Sequence[int | str | None]] = {
            port.get_any_name(): [dim.get_length() if dim.is_static else None for dim in port.get_partial_shape()]
            for port in self._compiled.inputs}

    def input_shapes(self) -> dict[str, Sequence[int | str | None]]:
        return self._shapes

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        results = self._request.infer(feeds)
        return [np.asarray(results[self._compiled.output(name)]) for name in outputs]


class OpenVinoScorer(OnnxScorer):
    """OnnxScorer whose export runs on OpenVINO, computing in `compute` ("bf16" or "float32"); `int8`: the
    block-wise int8 export (weights in 8 bits) instead of the float32 one."""

    backend = "openvino"
    runtime = "OpenVINO"

    def __init__(self, model_name: str, max_length: int, export_root: Path, *, compute: str, int8: bool = False,
                 threads: int | None = None, tokenizer: Any = None) -> None:
        if compute not in INFERENCE_PRECISION:
            raise ValueError(f"compute {compute!r}; allowed: {' | '.join(INFERENCE_PRECISION)}")
        self.compute = compute
        super().__init__(model_name, max_length, export_root, int8=int8, threads=threads, tokenizer=tokenizer)
        self.dtype = "int8" if int8 else compute

    def _open(self, graph: Path, threads: int) -> GraphSession:
        return OpenVinoSession(graph, threads, self.compute)
