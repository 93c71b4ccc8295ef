"""Where a reranker's ONNX export lives and how it gets there: once per model id + revision + variant, written to a
staging folder, synced and renamed into place, so a half-written export is never loaded and a killed one's leftovers
are removed by the next (../export_child.py). A manifest of checksums written last (../runtime/export_manifest.py) is
checked at every load: a damaged export is removed and written again. The writing runs in a child
process (../export_child.py); `python -m cogs.memory.rerank.onnx_export` is that child."""

from __future__ import annotations

import glob
import hashlib
import logging
import re
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..runtime.workers import MODEL_LOADING
from ..runtime.export_child import RecordPrinter, exporting_into, publish, remove_leftovers, run_export, staging_folder
from ..runtime.export_manifest import export_problem, write_manifest
from .onnx_blockwise import BlockwiseSettings, quantize_blockwise
from .onnx_graph import GRAPH_FILE, HEAD_NODE, OPSET, export_qwen3
from ..runtime.hardware import HardwareDetector

log = logging.getLogger(__name__)

# The module a child process runs to write an export (this one: `main` below).
CHILD = "cogs.memory.rerank.onnx_export"
# Bumped whenever the graph changes shape or meaning: older exports are then written again.
EXPORT_FORMAT = 1
# CPU flags with int8 dot products that accumulate in 32 bits (no 16-bit saturation).
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
# The int8 export where the CPU has VNNI: 8-bit weights in blocks of 32, activations quantized per block too
# (./onnx_blockwise.py; docs/reranker.md, "Precision", says what it measured against the dynamic per-tensor kind).
BLOCKWISE = BlockwiseSettings(bits=8, block_size=32, accuracy_level=4)
BLOCKWISE_VARIANT = f"int8-b{BLOCKWISE.block_size}"
# Every export variant this code makes; a folder of another (an older version's) is removed (`remove_retired`).
MADE_VARIANTS = frozenset({"fp32", BLOCKWISE_VARIANT, "int8-w7"})


@dataclass(frozen=True, slots=True)
class ExportSpec:
    """What an export is keyed by; its folder name says the same."""

    model_name: str
    revision: str
    variant: str
    yes_id: int
    no_id: int

    @property
    def folder(self) -> str:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "--", self.model_name).strip("-.")[-80:]
        return f"{safe}-{self.revision[:12]}-{self.variant}"

    @property
    def settings(self) -> dict[str, object]:
        """How the export is made, as its manifest records it: other settings mean another export."""
        return variant_settings(self.variant)

    def fields(self) -> dict[str, object]:
        """What the manifest records besides its files: the source model, its revision, and the settings."""
        return {"format": EXPORT_FORMAT, "model": self.model_name, "revision": self.revision,
                "variant": self.variant, "yes_id": self.yes_id, "no_id": self.no_id, "settings": self.settings}


def variant_settings(variant: str) -> dict[str, object]:
    """How the export `variant` is made ("fp32", "int8-b32" or "int8-w7")."""
    if variant == "fp32":
        return {"opset": OPSET, "dtype": "float32"}
    if variant == BLOCKWISE_VARIANT:
        return {"opset": OPSET, **BLOCKWISE.as_dict(), "quantized_ops": ["MatMul"], "kept_float32": [HEAD_NODE]}
    return {"opset": OPSET, "quantization": "dynamic int8, per output channel", "weight_bits": 7,
            "quantized_ops": ["MatMul"], "kept_float32": [HEAD_NODE]}


def model_revision(model_name: str) -> str:
    """The hub commit of a downloaded model, or for a local folder a hash of its config and weight files' sizes and
    modification times (so replacing the weights means a new export)."""
    from transformers.utils.hub import cached_file

    found = cached_file(model_name, "config.json")
    if found is None:  # only with flags this call does not pass: a missing file raises
        raise FileNotFoundError(f"{model_name} has no config.json")
    config = Path(found)
    if "snapshots" in config.parts and not Path(model_name).is_dir():
        return config.parts[config.parts.index("snapshots") + 1]
    digest = hashlib.sha256(config.read_bytes())
    for path in sorted(config.parent.iterdir()):
        if path.suffix in WEIGHT_SUFFIXES:
            stat = path.stat()
            digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _ensure(root: Path, spec: ExportSpec, build: Callable[[Path], None]) -> Path:
    """The folder of the export ``spec``, checked against its manifest; written (again) by ``build`` when it is
    missing, stale, truncated or damaged. Damage is said once, at WARNING, naming the file and what is wrong."""
    final = root / spec.folder
    if export_problem(final, spec.fields()) is None:
        return final
    with exporting_into(root):  # one export per folder at a time; what a killed one left is removed here
        remove_leftovers(root, spec.folder)
        problem = export_problem(final, spec.fields())
        if problem is None:  # another process finished it while this one waited
            return final
        if final.exists():
            log.warning("ONNX export %s %s; removing it and exporting it again (the reranker keeps first-stage "
                        "order meanwhile)", final, problem)
            shutil.rmtree(final)
        work = staging_folder(root, spec.folder)
        try:
            build(work)
            write_manifest(work, spec.fields())  # every file hashed whole, as written
            publish(work, final)
        finally:
            if work.exists():
                shutil.rmtree(work)
    return final


def _export_fp32(model_name: str, spec: ExportSpec, target: Path) -> None:
    """Write the fp32 export of `model_name` into `target`, in a child process."""
    run_export(CHILD, ["fp32", model_name, str(target), str(spec.yes_id), str(spec.no_id)], log)


def _write_fp32(model_name: str, yes_id: int, no_id: int, target: Path) -> None:
    """In the child: load the model with transformers and write its graph and weights."""
    import torch
    from transformers import AutoModelForCausalLM

    started = time.perf_counter()
    log.info("exporting reranker %s to ONNX in %s (first load only)", model_name, target.parent)
    with MODEL_LOADING:
        model = AutoModelForCausalLM.from_pretrained(model_name, dtype=torch.float32)
    model.train(False)  # eval mode: what PreTrainedModel.eval does, but typed

    def progress(done: int, total: int) -> None:
        if done == total or done % max(1, total // 4) == 0:
            log.info("ONNX export of %s: %d/%d layers written", model_name, done, total)

    with torch.inference_mode():
        export_qwen3(model, target, yes_id, no_id, progress)
    size_mb = sum(p.stat().st_size for p in target.iterdir()) / 2**20
    log.info("ONNX export of %s done in %.1f s (%.0f MB)", model_name, time.perf_counter() - started, size_mb)


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """ONNX Runtime's quantizer logs a few lines per tensor through the root logger at INFO; keep its warnings."""
    def keep(record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield
    finally:
        root.removeFilter(keep)


def int8_variant(cpu_features: tuple[str, ...]) -> str:
    """The int8 export for this CPU: with VNNI, block-wise 8-bit weights and activations ("int8-b32"); without,
    dynamic int8 with 7-bit weights ("int8-w7"; block-wise was not measured on a CPU without VNNI). The dynamic
    8-bit export ("int8") that VNNI CPUs got before reordered candidates beyond the fidelity bars
    (docs/reranker.md); it is no longer made."""
    return BLOCKWISE_VARIANT if VNNI_FLAGS & set(cpu_features) else "int8-w7"


def _quantize_int8(source: Path, target: Path, variant: str) -> None:
    """Write the int8 export `variant` of the fp32 one in `source` into `target`, in a child process."""
    run_export(CHILD, ["blockwise" if variant == BLOCKWISE_VARIANT else "int8", str(source), str(target)], log)


def _write_blockwise(source: Path, target: Path) -> None:
    """In the child: BLOCKWISE quantization of every weight matrix but the yes/no head (./onnx_blockwise.py)."""
    started = time.perf_counter()
    log.info("quantizing ONNX reranker %s to int8 (block-wise: %d-bit weights in blocks of %d, int8 activations)",
             source.name, BLOCKWISE.bits, BLOCKWISE.block_size)
    done = quantize_blockwise(source, target, BLOCKWISE, keep=[HEAD_NODE])
    size_mb = sum(p.stat().st_size for p in target.iterdir()) / 2**20
    log.info("int8 quantization done in %.1f s (%d matrices, %.0f MB)", time.perf_counter() - started, len(done),
             size_mb)


def _write_int8(source: Path, target: Path) -> None:
    """In the child: dynamic int8 with 7-bit weights (the export of a CPU without VNNI), one scale per output channel
    of each weight matrix; attention products and the two-row yes/no head stay fp32.

    Without VNNI (AVX2 only, as on the development machine) the u8 x s8 multiply-add sums pairs of products into
    16 bits and can saturate; 7-bit weights (reduce_range) rule that out. Measured there, max |P(yes) - official|:
    tiny test model 0.23 with 8-bit weights, 0.02 with 7; random weights of the real 0.6B shape, 4 LoCoMo pairs,
    0.0075 with 8-bit, 0.037 with 7. 7 bits is the choice that cannot fail badly. With VNNI, 8 bits did not
    saturate but the per-tensor activation scale reordered candidates beyond the bars: those CPUs get the
    block-wise export (`_write_blockwise`).
    """
    from onnxruntime.quantization import QuantType, quantize_dynamic

    started = time.perf_counter()
    log.info("quantizing ONNX reranker %s to int8 (per-channel, dynamic, 7-bit weights)", source.name)
    with _quiet_root_logger():
        quantize_dynamic(source / GRAPH_FILE, target / GRAPH_FILE, per_channel=True, reduce_range=True,
                         weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], nodes_to_exclude=[HEAD_NODE],
                         use_external_data_format=True, extra_options={"MatMulConstBOnly": True})
    size_mb = sum(p.stat().st_size for p in target.iterdir()) / 2**20
    log.info("int8 quantization done in %.1f s (%.0f MB)", time.perf_counter() - started, size_mb)


def remove_retired(root: Path, spec: ExportSpec) -> list[Path]:
    """Remove the exports of `spec`'s model and revision in a variant this code no longer makes (the dynamic 8-bit
    "int8" that VNNI CPUs got before "int8-b32": about 1 GB each), so an upgrade does not leave them on disk; the
    removed folders, each said once at INFO. Only that model's and revision's folders are read: another model's, or
    another revision's that a process still running an older model may use, are left alone."""
    prefix = spec.folder.removesuffix(spec.variant)
    removed = []
    for path in sorted(root.glob(f"{glob.escape(prefix)}*")):
        if path.is_dir() and path.name.removeprefix(prefix) not in MADE_VARIANTS:
            size_mb = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20
            shutil.rmtree(path, ignore_errors=True)
            log.info("removed the retired ONNX export %s (%.0f MB): this version no longer makes that variant",
                     path, size_mb)
            removed.append(path)
    return removed


def ensure_export(root: Path, model_name: str, yes_id: int, no_id: int, *, int8: bool = False,
                  cpu_features: tuple[str, ...] | None = None) -> Path:
    """The folder holding `model.onnx` for `model_name` (int8 or fp32), exporting it first if needed.
    `cpu_features` (default: this machine's) decides the int8 variant.

    Slow the first time (it loads the model with transformers and writes every weight); call it off the event loop.
    """
    revision = model_revision(model_name)
    fp32 = ExportSpec(model_name, revision, "fp32", yes_id, no_id)
    folder = _ensure(root, fp32, lambda target: _export_fp32(model_name, fp32, target))
    remove_retired(root, fp32)
    if not int8:
        return folder
    if cpu_features is None:
        cpu_features = HardwareDetector().detect().cpu_features
    spec = ExportSpec(model_name, revision, int8_variant(cpu_features), yes_id, no_id)
    return _ensure(root, spec, lambda target: _quantize_int8(folder, target, spec.variant))



def main(argv: list[str]) -> None:
    """The child's entry: `fp32 MODEL TARGET YES_ID NO_ID`, `int8 SOURCE TARGET` or `blockwise SOURCE TARGET`;
    log records go to stdout."""
    logging.basicConfig(level=logging.WARNING, handlers=[RecordPrinter()])
    log.setLevel(logging.INFO)
    kind, *rest = argv
    if kind == "fp32":
        model_name, target, yes_id, no_id = rest
        _write_fp32(model_name, int(yes_id), int(no_id), Path(target))
    elif kind == "int8":
        source, target = rest
        _write_int8(Path(source), Path(target))
    elif kind == "blockwise":
        source, target = rest
        _write_blockwise(Path(source), Path(target))
    else:
        raise SystemExit(f"unknown export kind {kind!r}: fp32 | int8 | blockwise")


if __name__ == "__main__":
    log = logging.getLogger("cogs.memory.rerank.onnx_export")  # the name it has when imported, not "__main__"
    main(sys.argv[1:])
