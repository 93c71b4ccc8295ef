"""QueryOnnx: an embedding model's transformer exported to ONNX and run by ONNX Runtime on one thread, for embedding
one query at a time on a CPU.

A query is a few dozen tokens. On one core of the 2-core AVX2 dev machine ONNX Runtime ran MiniLM on 300 LoCoMo
questions in 12.4 ms at the median against 20.2 ms for the frozen TorchScript trace (query_trace.py), with the same
vectors to 2e-7 (2026-11-23, both in one run). The export is seconds of Python holding the GIL, so a child process
writes it (export_child.py), once per model, into a folder of ``root`` named after the model, with a manifest of
checksums (export_manifest.py): a damaged or truncated export is said once, removed and written again. The graph is
checked against the eager model at every load, and where anything fails queries stay on the trace.

``python -m cogs.memory.vectors.query_onnx SOURCE TARGET`` is that child.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, cast

import torch

from ..runtime.export_child import RecordPrinter, exporting_into, publish, remove_leftovers, run_export, staging_folder
from ..runtime.export_manifest import export_problem, write_manifest
from .query_trace import MAX_ABS_DIFF, PROBES, eager_embedding

__all__ = ("GRAPH_FILE", "QueryOnnx", "export_folder")

log = logging.getLogger(__name__)

CHILD = "cogs.memory.vectors.query_onnx"
# Bumped whenever the graph changes shape or meaning: older exports are then written again.
EXPORT_FORMAT = 1
GRAPH_FILE = "transformer.onnx"
INPUTS = ("input_ids", "attention_mask")
OPSET = 17
# A local model folder's files whose sizes and modification times make its revision (replaced weights: a new export).
_REVISION_SUFFIXES = (".json", ".safetensors", ".bin", ".pt")
# One process, one session per model (a profile switch back and forth reuses it).
_SESSIONS: dict[str, QueryOnnx | None] = {}
_SESSIONS_LOCK = threading.Lock()


def export_folder(root: Path, source: str) -> Path:
    """Where the export of the model at ``source`` (a local path or a hub id) lives under ``root``."""
    digest = hashlib.sha256(f"{source}\0{EXPORT_FORMAT}".encode()).hexdigest()[:16]
    name = "".join(c if c.isalnum() or c in "-._" else "-" for c in Path(source).name)[:40]
    return root / f"query-{name}-{digest}"


class QueryOnnx:
    """The model's transformer in an ONNX Runtime session; pooling and normalisation run as the model's own modules."""

    def __init__(self, model: Any, session: Any) -> None:
        self._model = model
        self._session = session

    @classmethod
    def shared(cls, source: str, model: Any, root: Path) -> QueryOnnx | None:
        """The process's one session for the weights at ``source``, exported into ``root`` the first time."""
        with _SESSIONS_LOCK:
            if source not in _SESSIONS:
                _SESSIONS[source] = cls.load(source, model, root)
            return _SESSIONS[source]

    @classmethod
    def load(cls, source: str, model: Any, root: Path) -> QueryOnnx | None:
        """A checked session over the export of ``source`` (written first if missing), or None: the trace then."""
        folder = export_folder(root, source)
        try:
            _export(source, folder)
            runner = cls(model, _session(folder / GRAPH_FILE))
            worst = max(float((runner.embed(text) - eager_embedding(model, text)).abs().max()) for text in PROBES)
        except Exception:  # noqa: BLE001 - no ONNX Runtime, a model it cannot export: queries run on torch
            log.info("Query embedding runs on torch: the ONNX export of %s could not be used", source, exc_info=True)
            return None
        if worst > MAX_ABS_DIFF:
            log.warning("Query embedding runs on torch: the ONNX export in %s differs from the model by %.2g "
                        "(delete the folder to export it again)", folder, worst)
            return None
        log.info("Query embedding runs on ONNX Runtime (%s)", folder)
        return runner

    def embed(self, text: str) -> torch.Tensor:
        """One text's sentence embedding (a 1 x dimension tensor), as the whole model would give it."""
        features = self._model.preprocess([text])
        feeds = {name: features[name].numpy() for name in INPUTS}
        hidden = self._session.run(None, feeds)[0]
        features["token_embeddings"] = torch.from_numpy(hidden)
        with torch.inference_mode():
            for module in list(self._model)[1:]:
                features = module(features)
        return cast(torch.Tensor, features["sentence_embedding"])


def source_revision(source: str) -> str:
    """What the weights at ``source`` are: for a local folder, a hash of its config and weight files' names, sizes
    and modification times; for a hub id, the id itself (its download sits at a path of its own)."""
    folder = Path(source)
    if not folder.is_dir():
        return source
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.suffix in _REVISION_SUFFIXES and path.is_file():
            status = path.stat()
            digest.update(f"{path.relative_to(folder)}:{status.st_size}:{status.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def export_fields(source: str) -> dict[str, object]:
    """What an export's manifest records besides its files: the source, its revision, and how it was exported."""
    return {"format": EXPORT_FORMAT, "source": source, "revision": source_revision(source),
            "settings": {"opset": OPSET, "inputs": list(INPUTS), "output": "last_hidden_state"}}


def _export(source: str, folder: Path) -> None:
    """Make sure ``folder`` holds a whole, current export of ``source``: written in a child process when it is
    missing, and written again (said once, at WARNING) when it is stale, truncated or damaged."""
    expected = export_fields(source)
    if export_problem(folder, expected) is None:
        return
    with exporting_into(folder.parent):
        remove_leftovers(folder.parent, folder.name)
        problem = export_problem(folder, expected)
        if problem is None:  # written by another process while this one waited
            return
        if folder.exists():
            log.warning("Query embedder export %s %s; removing it and exporting it again", folder, problem)
            shutil.rmtree(folder)
        log.info("Exporting the query embedder %s to ONNX in %s (once)", source, folder)
        run_export(CHILD, [source, str(folder)], log)


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # The query thread runs one query at a time beside ingest and keyword search: one core, no spinning pool.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


class _LastHiddenState(torch.nn.Module):
    """The transformer called by keyword, as sentence-transformers calls it, giving only its last hidden state."""

    def __init__(self, transformer: torch.nn.Module) -> None:
        super().__init__()
        self.transformer = transformer

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        output = self.transformer(input_ids=input_ids, attention_mask=attention_mask)
        return cast(torch.Tensor, output.last_hidden_state)


def write_export(source: str, target: Path) -> None:
    """In the child: export the transformer of the model at ``source`` into the folder ``target``, which appears
    whole (written beside it, then renamed) or not at all."""
    from sentence_transformers import SentenceTransformer

    local = Path(source)
    model = SentenceTransformer(source, device="cpu", local_files_only=local.is_dir())
    example = model.preprocess([PROBES[1]])
    staging = staging_folder(target.parent, target.name)
    try:
        axes = {0: "batch", 1: "tokens"}
        with torch.no_grad():
            torch.onnx.export(_LastHiddenState(model[0].auto_model.eval()),
                              tuple(example[name] for name in INPUTS), str(staging / GRAPH_FILE),
                              input_names=list(INPUTS), output_names=["last_hidden_state"],
                              dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
                              opset_version=OPSET, dynamo=False)
        write_manifest(staging, export_fields(source))  # every file hashed whole, as written
        publish(staging, target)
        log.info("Query embedder exported to %s", target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str]) -> None:
    """The child's entry: `SOURCE TARGET`; log records go to stdout."""
    logging.basicConfig(level=logging.WARNING, handlers=[RecordPrinter()])
    log.setLevel(logging.INFO)
    source, target = argv
    write_export(source, Path(target))


if __name__ == "__main__":
    log = logging.getLogger(CHILD)  # the name it has when imported, not "__main__"
    main(sys.argv[1:])
