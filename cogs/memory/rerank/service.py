"""RerankerService: the second stage of recall (Qwen3-Reranker), best effort, on a worker thread it owns."""

from __future__ import annotations

import asyncio
import logging
import queue
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from .backends import LocalBackend, build_local_scorer
from .http import HttpRerankError, HttpScorer
from .local import DEFAULT_INSTRUCTION
from .stats import RerankStats
from ..config import ONNX_DIR
from ..profile import HardwareDetector, MemoryProfile, resolve_device
from ..records import checked_limit
from ..workers import WorkerThread

log = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = 16
# Where local rerankers are exported to ONNX (once per model, revision and dtype): the bot's data folder.
DEFAULT_EXPORT_DIR = ONNX_DIR
Backend = LocalBackend | HttpScorer


class ScoreCache:
    """LRU of scores keyed by (model, instruction, query, document)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = self.misses = 0
        self._entries: OrderedDict[tuple[str, str, str, str], float] = OrderedDict()

    def get(self, key: tuple[str, str, str, str]) -> float | None:
        value = self._entries.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return value

    def put(self, key: tuple[str, str, str, str], value: float) -> None:
        if self.capacity <= 0:
            return
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _ordered(candidates: list[dict], scores: list[float | None], min_score: float, top_k: int | None) -> list[dict]:
    """Scored by rerank_score (ties keep first-stage order), then the unscored in first-stage order."""
    out = []
    for candidate, score in zip(candidates, scores, strict=True):
        copy = dict(candidate)
        copy["rerank_score"] = score
        out.append(copy)
    scored = sorted((c for c in out if c["rerank_score"] is not None and c["rerank_score"] >= min_score),
                    key=lambda c: -c["rerank_score"])
    ranked = scored + [c for c in out if c["rerank_score"] is None]
    return ranked if top_k is None else ranked[:top_k]


class RerankerService:
    """Scores first-stage candidates with Qwen3-Reranker (provider "local"), a `/v1/rerank` server ("http") or
    not at all ("none"). Never raises to the caller for a scoring problem: it falls back to first-stage order.

    `switch(profile)` replaces the profile and its model live; the Memory facade calls it from `switch_profile`.
    """

    def __init__(
        self,
        profile: MemoryProfile,
        reranker_model: str | None = None,
        *,
        device: str | None = None,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        detector: HardwareDetector | None = None,
        export_dir: Path = DEFAULT_EXPORT_DIR,
    ) -> None:
        self._profile = profile
        self._export_dir = export_dir
        self._model_name = reranker_model or profile.reranker.model
        self._detector = detector or HardwareDetector()
        self._backend: Backend | None = None
        # Where the model goes: the Memory facade resolves "auto" once for all models; None resolves it here.
        self._target_device = device
        self._device: str | None = None
        self._load_error: str | None = None
        self._last_error: str | None = None
        self._last_switch_error: str | None = None
        self._cache = ScoreCache(profile.reranker.cache_size)
        self._stats = RerankStats()
        self._worker = WorkerThread(f"reranker-{profile.name}", queue_size)
        self._closed = False
        if self._wants_backend(profile) and profile.reranker.preload:
            self._worker.submit(self._ensure_loaded, block=True)

    # --- public API --------------------------------------------------------------------------------------------

    @property
    def profile(self) -> MemoryProfile:
        return self._profile

    def rerank_results(
        self,
        query: str,
        candidates: list[dict],
        score_field: str = "content",
        top_k: int | None = None,
        instruction: str | None = None,
    ) -> list[dict]:
        """Blocking form (for threads and CLIs, not the event loop): a new list of copies with `rerank_score`."""
        job = self._job(query, candidates, score_field, top_k, instruction)
        future = self._submit(job)
        return job(fallback=True) if future is None else future.result()

    async def arerank_results(
        self,
        query: str,
        candidates: list[dict],
        score_field: str = "content",
        top_k: int | None = None,
        instruction: str | None = None,
    ) -> list[dict]:
        """Async form: the work runs on the service's worker thread; the event loop only waits."""
        job = self._job(query, candidates, score_field, top_k, instruction)
        future = self._submit(job)
        return job(fallback=True) if future is None else await asyncio.wrap_future(future)

    def status(self) -> dict[str, Any]:
        settings = self._profile.reranker
        return {
            "profile": self._profile.name,
            "provider": settings.provider if settings.enabled else "none",
            "model": self._model_name,
            "device": self._device,
            "backend": getattr(self._backend, "backend", None),
            "dtype": getattr(self._backend, "dtype", self._profile.dtype),
            "loaded": self._backend is not None,
            "available": self._load_error is None,
            "reason": self._load_error,
            "last_error": self._last_error,
            "last_switch_error": self._last_switch_error,
            "queue_depth": self._worker.depth,
            "cache_entries": len(self._cache),
            "cache_hits": self._cache.hits,
            "cache_misses": self._cache.misses,
            "prefix_cache_hits": getattr(getattr(self._backend, "constant_prefixes", None), "hits", None),
            **self._stats.summary(),
        }

    async def switch(self, profile: MemoryProfile, reranker_model: str | None = None, *,
                     device: str | None = None) -> bool:
        """Load what `profile` needs off the loop, then swap on the worker after the work already queued.

        On failure the old profile and model stay and the reason is in `status()["last_switch_error"]`.
        """
        model_name = reranker_model or profile.reranker.model
        try:
            backend, loaded_on = await asyncio.to_thread(self._build_backend, profile, model_name, device) \
                if self._wants_backend(profile) else (None, None)
        except Exception as exc:
            self._last_switch_error = f"{type(exc).__name__}: {exc}"
            log.warning("profile switch to %s failed, keeping %s: %s",
                        profile.name, self._profile.name, self._last_switch_error)
            return False

        def swap() -> None:
            old = self._backend
            self._profile, self._model_name, self._backend, self._device = profile, model_name, backend, loaded_on
            self._target_device = device
            self._load_error = self._last_switch_error = None
            self._cache = ScoreCache(profile.reranker.cache_size)
            self._stats = RerankStats()
            if old is not None:
                old.close()

        await asyncio.wrap_future(await asyncio.to_thread(self._worker.submit, swap, block=True))
        log.info("reranker switched to profile %s (%s)", profile.name, model_name)
        return True

    def close(self) -> None:
        """Finish queued work, stop the worker and free the model."""
        if self._closed:
            return
        self._closed = True
        self._worker.stop(timeout=None)
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # --- worker side -------------------------------------------------------------------------------------------

    def _submit(self, job: Callable[..., list[dict]]) -> Future | None:
        if self._closed:
            log.warning("reranker is closed; returning first-stage order")
            return None
        try:
            return self._worker.submit(job, block=False)
        except queue.Full:
            log.warning("reranker queue full (%d waiting); returning first-stage order", self._worker.capacity)
            return None

    def _job(self, query: str, candidates: list[dict], score_field: str, top_k: int | None,
             instruction: str | None) -> Callable[..., list[dict]]:
        if top_k is not None:
            checked_limit(top_k)
        budget_ms = self._profile.reranker.time_budget_ms
        deadline = time.monotonic() + budget_ms / 1000 if budget_ms > 0 else None
        candidates = list(candidates)

        def run(fallback: bool = False) -> list[dict]:
            settings = self._profile.reranker
            k = settings.top_k if top_k is None else top_k
            scores: list[float | None] = [None] * len(candidates)
            if not fallback and candidates and self._wants_backend(self._profile):
                head = candidates[: settings.candidates]
                docs = [str(c.get(score_field) or "") for c in head]
                scores[: len(head)] = self._score(query, docs, instruction or settings.instruction
                                                  or DEFAULT_INSTRUCTION, deadline)
            return _ordered(candidates, scores, settings.min_score, k)

        return run

    def _score(self, query: str, docs: list[str], instruction: str, deadline: float | None) -> list[float | None]:
        if not self._ensure_loaded():
            return [None] * len(docs)
        started, hits = time.perf_counter(), self._cache.hits
        scores = self._score_loaded(query, docs, instruction, deadline)
        self._stats.record(1000 * (time.perf_counter() - started), len(docs),
                           sum(score is not None for score in scores), self._cache.hits - hits)
        return scores

    def _score_loaded(self, query: str, docs: list[str], instruction: str,
                      deadline: float | None) -> list[float | None]:
        keys = [(self._model_name, instruction, query, doc) for doc in docs]
        scores = [self._cache.get(key) for key in keys]
        missing = [i for i, score in enumerate(scores) if score is None]
        if not missing:
            return scores
        try:
            fresh = self._backend_score(query, [docs[i] for i in missing], instruction, deadline)
        except HttpRerankError as exc:
            self._last_error = str(exc)
            log.warning("reranking skipped, first-stage order kept: %s", exc)
            return scores
        except Exception as exc:
            self._last_error = f"{type(exc).__name__}: {exc}"
            log.exception("reranking failed, first-stage order kept")
            return scores
        for i, value in zip(missing, fresh, strict=True):
            scores[i] = value
            if value is not None:
                self._cache.put(keys[i], value)
        return scores

    def _backend_score(self, query: str, docs: list[str], instruction: str,
                       deadline: float | None) -> list[float | None]:
        settings = self._profile.reranker
        if isinstance(self._backend, HttpScorer):
            timeout = settings.time_budget_ms / 1000 if deadline is None else deadline - time.monotonic()
            if timeout <= 0:
                return [None] * len(docs)
            return self._backend.score(query, docs, timeout)
        return self._backend.score(query, docs, instruction, settings.batch_size, deadline)

    def _ensure_loaded(self) -> bool:
        """Load the backend once; a failure is remembered (not retried) until a profile switch."""
        if self._backend is not None:
            return True
        if self._load_error is not None:
            return False
        try:
            self._backend, self._device = self._build_backend(self._profile, self._model_name, self._target_device)
        except Exception as exc:
            self._load_error = f"{type(exc).__name__}: {exc}"
            log.warning("reranker unavailable (first-stage order will be used): cannot load %s: %s",
                        self._model_name, self._load_error)
            return False
        return True

    @staticmethod
    def _wants_backend(profile: MemoryProfile) -> bool:
        return profile.reranker.enabled and profile.reranker.provider != "none"

    def _build_backend(self, profile: MemoryProfile, model_name: str,
                       device: str | None) -> tuple[Backend, str | None]:
        settings = profile.reranker
        if settings.provider == "http":
            return HttpScorer(settings.http_url or "", model_name, settings.http_api), None
        device = device or resolve_device(profile, self._detector.detect())
        started = time.perf_counter()
        scorer = build_local_scorer(model_name, backend=settings.backend, device=device, dtype=profile.dtype,
                                    max_length=settings.max_length, export_root=self._export_dir,
                                    int8=settings.int8)
        log.info("reranker %s loaded on %s (%s, %s) in %.1f s", model_name, device, scorer.backend, scorer.dtype,
                 time.perf_counter() - started)
        return scorer, device
