"""Qwen3-Reranker on ONNX Runtime (CPU): the torch scorer's prompts, prefix caches and packing, with the model
replaced by its ONNX export (exported on first load into the data folder, reused afterwards)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np
import torch

from .onnx_export import ensure_export
from .onnx_graph import (ATTENTION_BIAS, GRAPH_FILE, INPUT_IDS, LAST_INDEX, LOGITS, POSITION_IDS, past_names,
                          present_names)
from .local import KV, LocalScorer, load_tokenizer

if TYPE_CHECKING:
    import onnxruntime

log = logging.getLogger(__name__)

MASKED = np.finfo(np.float32).min


def _session_options(threads: int) -> onnxruntime.SessionOptions:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle worker threads sleep instead of spinning: the bot's event loop shares these cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


class GraphSession(Protocol):
    """What OnnxScorer needs of a runtime holding the exported graph (ONNX Runtime, or OpenVINO: ./openvino.py)."""

    def input_shapes(self) -> dict[str, Sequence[int | str | None]]:
        """Each input's shape, a name standing for a dimension that varies."""
        ...

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]: ...


class OrtSession:
    """An ONNX Runtime CPU session of the exported graph."""

    def __init__(self, graph: Path, threads: int) -> None:
        import onnxruntime as ort

        self._session = ort.InferenceSession(str(graph), _session_options(threads), providers=["CPUExecutionProvider"])

    def input_shapes(self) -> dict[str, Sequence[int | str | None]]:
        return {i.name: i.shape for i in self._session.get_inputs()}

    def run(self, outputs: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        return cast(list[np.ndarray], self._session.run(outputs, feeds))


class OnnxScorer(LocalScorer):
    """LocalScorer whose forward passes run the model's ONNX export on the CPU (fp32, or int8 weights), in an ONNX
    Runtime session (or another runtime's: `_open`)."""

    backend = "onnx"
    runtime = "ONNX Runtime"

    def __init__(self, model_name: str, max_length: int, export_root: Path, *, int8: bool = False,
                 threads: int | None = None, tokenizer: Any = None) -> None:
        if tokenizer is None:
            tokenizer = load_tokenizer(model_name)
        self._init_prompts(model_name, tokenizer, "cpu", "int8" if int8 else "float32", max_length)
        self.export_dir = ensure_export(export_root, model_name, self.yes_id, self.no_id, int8=int8)
        started = time.perf_counter()
        self.session = self._open(self.export_dir / GRAPH_FILE, threads or torch.get_num_threads())
        shapes = self.session.input_shapes()
        self.n_layers = sum(name.startswith("past_key_") for name in shapes)
        kv_heads, _, head_dim = shapes[past_names(0)[0]]
        if not isinstance(kv_heads, int) or not isinstance(head_dim, int):
            raise ValueError(f"{self.export_dir}: the KV cache's heads and head size are not fixed in the graph")
        self._empty_kv: KV = [(np.zeros((kv_heads, 0, head_dim), np.float32),) * 2 for _ in range(self.n_layers)]
        self._present = [name for i in range(self.n_layers) for name in present_names(i)]
        log.info("%s session for %s ready in %.1f s (%s)", self.runtime, model_name, time.perf_counter() - started,
                 self.export_dir.name)

    def _open(self, graph: Path, threads: int) -> GraphSession:
        """The session that runs the exported graph: ONNX Runtime here, another runtime in a subclass."""
        return OrtSession(graph, threads)

    def _run(self, past: KV, ids: list[int], positions: np.ndarray, bias: np.ndarray, last: list[int],
             outputs: list[str]) -> list[np.ndarray]:
        feeds = {INPUT_IDS: np.asarray(ids, np.int64), POSITION_IDS: positions.astype(np.int64),
                 ATTENTION_BIAS: bias, LAST_INDEX: np.asarray(last, np.int64)}
        for i, (key, value) in enumerate(past or self._empty_kv):
            feeds[past_names(i)[0]], feeds[past_names(i)[1]] = key, value
        return self.session.run(outputs, feeds)

    def _extend_kv(self, past: KV, ids: list[int]) -> KV:
        if not ids:
            return past
        start = past[0][0].shape[1] if past else 0
        n = len(ids)
        bias = np.zeros((n, start + n), np.float32)
        bias[:, start:] = np.where(np.tri(n, dtype=bool), 0.0, MASKED)
        present = self._run(past, ids, np.arange(start, start + n), bias, [n - 1], self._present)
        return list(zip(present[0::2], present[1::2], strict=True))

    def forward_tails(self, prefix_kv: KV, tails: list[list[int]]) -> list[float]:
        """P(yes) for each tail after the cached prefix, all tails packed into one run (see LocalScorer)."""
        start = prefix_kv[0][0].shape[1] if prefix_kv else 0
        lengths = [len(t) for t in tails]
        total = sum(lengths)
        positions = np.concatenate([np.arange(start, start + n) for n in lengths])
        bias = np.full((total, start + total), MASKED, np.float32)
        bias[:, :start] = 0.0
        last, offset = [], 0
        for n in lengths:
            block = bias[offset : offset + n, start + offset : start + offset + n]
            block[np.tri(n, dtype=bool)] = 0.0
            offset += n
            last.append(offset - 1)
        ids = [token for tail in tails for token in tail]
        (logits,) = self._run(prefix_kv, ids, positions, bias, last, [LOGITS])
        return torch.log_softmax(torch.from_numpy(logits), dim=-1)[:, 1].exp().tolist()

    def close(self) -> None:
        self.constant_prefixes.clear()
        del self.session
