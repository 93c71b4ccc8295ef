"""Which local scorer runs a reranker model: its family (a yes/no LM like Qwen3-Reranker, or a classic
cross-encoder) read from the model's config, and its backend (ONNX Runtime on a CPU, torch otherwise)."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any

from .cross_encoder import CrossEncoderScorer
from .fidelity import FidelityBars
from .local import LocalScorer
from .onnx import OnnxScorer
from .openvino import OpenVinoScorer
from .onnx_export import model_revision
from .precision import PrecisionChoice, cache_path, key_fields, measure, select
from ..runtime.hardware import HardwareInfo
from ..runtime.profile import BACKENDS, OPENVINO_PRECISIONS, RERANKER_PRECISIONS, RerankerSettings

log = logging.getLogger(__name__)

YES_NO_LM, CROSS_ENCODER = "yes-no-lm", "cross-encoder"
# Model types the ONNX graph is written for; other yes/no LMs run on torch.
ONNX_MODEL_TYPES = frozenset({"qwen3"})
LocalBackend = LocalScorer | CrossEncoderScorer
# RSS of Qwen3-Reranker-0.6B's export on OpenVINO once it has scored, measured (docs/reranker.md): the mapped float32
# weights beside the compiled bf16 ones; the int8 export is a quarter of the float32 one. A precision that could push
# the bot out of memory is not measured: the RAM it needs leaves room for the bot's embedder, index and cache.
OPENVINO_RESIDENT_GB = {"openvino-bf16": 4.5, "openvino-int8": 2.5}
OPENVINO_MIN_RAM_GB = {"openvino-bf16": 8.0, "openvino-int8": 4.0}
NO_NATIVE_BF16 = "no native bf16 on this CPU (avx512_bf16 or amx_bf16): emulated, slower than float32"


def model_family(config: Any) -> str:
    """YES_NO_LM for a causal LM (scored by its "yes"/"no" logits), CROSS_ENCODER for a sequence classifier."""
    architectures = list(getattr(config, "architectures", None) or [])
    if any(name.endswith("ForSequenceClassification") for name in architectures):
        if config.num_labels not in (1, 2):
            raise ValueError(f"a cross-encoder needs 1 or 2 labels, this model has {config.num_labels}")
        return CROSS_ENCODER
    if any(name.endswith("ForCausalLM") for name in architectures):
        return YES_NO_LM
    raise ValueError(f"architectures {architectures} are neither a causal LM (Qwen3-Reranker style) nor a "
                     "sequence classifier (cross-encoder)")


def import_error(module: str) -> str | None:
    """Why the runtime ``module`` ("onnxruntime", "openvino") cannot be used here, or None when it imports."""
    try:
        importlib.import_module(module)
    except ImportError as exc:  # not installed, or its shared libraries do not load
        return f"{type(exc).__name__}: {exc}"
    return None


def choose_backend(requested: str, family: str, config: Any, device: str, dtype: str) -> str:
    """"onnx" or "torch" for this model here. ONNX needs a Qwen3 yes/no LM in float32 on the CPU; "auto" takes it
    where that holds and ONNX Runtime imports; "onnx" where that does not hold is a configuration error, and it
    falls back to torch (with a warning) when the runtime is missing."""
    if requested not in BACKENDS:
        raise ValueError(f"backend {requested!r}; allowed: {' | '.join(BACKENDS)}")
    if requested == "torch" or family != YES_NO_LM:
        return "torch"
    fits = device == "cpu" and dtype == "float32" and config.model_type in ONNX_MODEL_TYPES
    if requested == "onnx" and not fits:
        raise ValueError(f"backend 'onnx' runs float32 Qwen3 rerankers on the CPU, not {config.model_type} "
                         f"{dtype} on {device}; set backend = \"torch\" or \"auto\"")
    if not fits:
        return "torch"
    reason = import_error("onnxruntime")
    if reason is None:
        return "onnx"
    log.warning("ONNX Runtime is not available (%s); the reranker runs on torch", reason)
    return "torch"


def build_local_scorer(model_name: str, *, backend: str, device: str, dtype: str, max_length: int,
                       export_root: Path, int8: bool = False, tokenizer: Any = None) -> LocalBackend:
    """The scorer for `model_name`: family from its config, backend from `choose_backend`. When the ONNX side
    fails to export or load, torch runs the model instead (the reason is logged). `tokenizer`: already loaded
    by `load_tokenizer` (else it is loaded here)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_name)
    family = model_family(config)
    chosen = choose_backend(backend, family, config, device, dtype)
    if family == CROSS_ENCODER:
        return CrossEncoderScorer(model_name, device, dtype, max_length, tokenizer)
    if chosen == "onnx":
        try:
            return OnnxScorer(model_name, max_length, export_root, int8=int8, tokenizer=tokenizer)
        except Exception:
            log.exception("ONNX Runtime backend for %s failed; the reranker runs on torch", model_name)
    if int8:
        log.warning("reranker int8 is an ONNX Runtime option; %s runs on torch in %s", model_name, dtype)
    return LocalScorer(model_name, device, dtype, max_length, tokenizer)


def precision_scorer(precision: str, model_name: str, *, backend: str, max_length: int, export_root: Path,
                     hardware: HardwareInfo, tokenizer: Any = None) -> LocalBackend | str:
    """The CPU scorer of a Qwen3 reranker in `precision` (RERANKER_PRECISIONS), or why it cannot run here."""
    if precision == "float32":
        return build_local_scorer(model_name, backend=backend, device="cpu", dtype="float32", max_length=max_length,
                                  export_root=export_root, tokenizer=tokenizer)
    if precision == "int8":
        if backend == "torch":
            return "int8 runs on ONNX Runtime, and the profile's backend is torch"
        if (reason := import_error("onnxruntime")) is not None:
            return f"ONNX Runtime is not available: {reason}"
        return OnnxScorer(model_name, max_length, export_root, int8=True, tokenizer=tokenizer)
    if precision == "bf16":
        if not hardware.cpu_bf16:
            return NO_NATIVE_BF16
        return LocalScorer(model_name, "cpu", "bfloat16", max_length, tokenizer)
    if precision in OPENVINO_PRECISIONS:
        return openvino_scorer(precision, model_name, backend=backend, max_length=max_length,
                               export_root=export_root, hardware=hardware, tokenizer=tokenizer)
    raise ValueError(f"precision {precision!r}; allowed: {' | '.join(RERANKER_PRECISIONS)}")


def openvino_scorer(precision: str, model_name: str, *, backend: str, max_length: int, export_root: Path,
                    hardware: HardwareInfo, tokenizer: Any = None) -> OpenVinoScorer | str:
    """The ONNX export run by OpenVINO: "openvino-bf16" (the float32 export computed in bf16) or "openvino-int8"
    (the int8 export, computed in bf16 where the CPU has it natively), or why it cannot run here. OpenVINO failing
    to compile the export is a reason too, logged whole: the measurement then skips it."""
    if backend == "torch":
        return f"{precision} runs the ONNX export, and the profile's backend is torch"
    if precision == "openvino-bf16" and not hardware.cpu_bf16:
        return NO_NATIVE_BF16
    if hardware.ram_gb < OPENVINO_MIN_RAM_GB[precision]:
        return (f"OpenVINO holds about {OPENVINO_RESIDENT_GB[precision]} GB for this export; this machine has "
                f"{hardware.ram_gb:.1f} GB of RAM (it needs {OPENVINO_MIN_RAM_GB[precision]})")
    if (reason := import_error("openvino")) is not None:
        return f"OpenVINO is not available: {reason}"
    int8 = precision == "openvino-int8"
    try:
        return OpenVinoScorer(model_name, max_length, export_root, compute="bf16" if hardware.cpu_bf16 else "float32",
                              int8=int8, tokenizer=tokenizer)
    except Exception as exc:
        log.exception("OpenVINO could not run %s in %s", model_name, precision)
        return f"OpenVINO could not run it: {type(exc).__name__}: {exc}"


def build_measured_scorer(model_name: str, settings: RerankerSettings, export_root: Path, hardware: HardwareInfo,
                          instruction: str, *, threads: int, tokenizer: Any = None,
                          bars: FidelityBars = FidelityBars()) -> tuple[LocalBackend, PrecisionChoice | None]:
    """The CPU scorer in the precision `settings.precisions` allows that is fastest here within `bars` of float32
    (measured once per machine, then cached beside the ONNX exports; see precision.py), and that choice. A model
    that is not a Qwen3 yes/no LM (a cross-encoder) is built as `build_local_scorer` does, with no choice."""
    from transformers import AutoConfig

    if model_family(AutoConfig.from_pretrained(model_name)) != YES_NO_LM:
        return build_local_scorer(model_name, backend=settings.backend, device="cpu", dtype="float32",
                                  max_length=settings.max_length, export_root=export_root, tokenizer=tokenizer), None

    def build(precision: str) -> LocalBackend | str:
        return precision_scorer(precision, model_name, backend=settings.backend, max_length=settings.max_length,
                                export_root=export_root, hardware=hardware, tokenizer=tokenizer)

    fields = key_fields(model_name, model_revision(model_name), hardware.cpu_features, threads, settings.precisions,
                        bars, settings.backend)
    choice = select(cache_path(export_root, fields), fields, bars,
                    lambda: measure(build, settings.precisions, instruction, settings.batch_size))
    scorer = build(choice.precision)
    if isinstance(scorer, str):  # the cache says it ran here, and now it cannot: run the reference
        log.warning("reranker precision %s cannot run now (%s); running float32", choice.precision, scorer)
        scorer = build("float32")
        assert not isinstance(scorer, str)
    return scorer, choice
