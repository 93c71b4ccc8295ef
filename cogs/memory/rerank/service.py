"""RerankerService: the second stage of recall (Qwen3-Reranker), best effort: scoring on a worker thread it owns,
model loads on a loader thread beside it, so a recall never waits for a model to load."""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .precision import candidate_depth, torch_threads
from .scorers import LocalBackend, build_local_scorer, build_measured_scorer
from .cache import ScoreCache
from .http import HttpRerankError, HttpScorer
from .load_help import UNAVAILABLE, load_failure
from .local import DEFAULT_INSTRUCTION, load_tokenizer
from .providers import Backend, Provider, ProviderStatus
from .stats import RerankStats, RerankSummary
from ..runtime.config import ONNX_DIR
from ..runtime.hardware import HardwareDetector
from ..runtime.profile import MemoryProfile, ProviderSettings, provider_chain, resolve_device
from ..runtime.workers import WorkerThread

log = logging.getLogger(__name__)

DEFAULT_QUEUE_SIZE = 16
# Where local rerankers are exported to ONNX (once per model, revision and dtype): the bot's data folder.
DEFAULT_EXPORT_DIR = ONNX_DIR


@dataclass(frozen=True, slots=True)
class RerankScores:
    """One query's scores, one per text in the order given: None for a text no provider scored (past the profile's
    candidate count or its time budget, a model still loading, a full queue, every provider failing). Beside them,
    what this call did, counted as it ran: ``offered``, the texts a ready provider took (0 when none was ready);
    ``cached``, the scores its cache held."""

    scores: tuple[float | None, ...]
    by: str | None = None  # what scored them ("onnx float32", "http"); None when nothing did
    offered: int = 0
    cached: int = 0

    @property
    def scored(self) -> int:
        """How many texts the budget allowed to be scored."""
        return sum(score is not None for score in self.scores)


@dataclass(frozen=True, slots=True)
class RerankerStatus:
    """The first provider's state at the top level, every provider's in `providers`, and the last hour's figures."""

    profile: str
    provider: str  # the chain, "local → http", or "none"
    model: str
    device: str | None
    backend: str | None  # "torch", "onnx", ...; None until loaded
    dtype: str
    loaded: bool
    loading: bool
    available: bool
    reason: str | None  # why the first provider is unavailable
    last_error: str | None
    last_switch_error: str | None
    providers: tuple[ProviderStatus, ...]
    queue_depth: int
    cache_entries: int
    cache_hits: int
    cache_misses: int
    prefix_cache_hits: int | None  # None when no backend caches prompt prefixes
    precision: str | None  # the measured precision choice, in one line; None where the profile asks for none
    depth: int  # candidates a recall offers the reranker (profile's, or grown by the measured speed)
    last_hour: RerankSummary


class RerankerService:
    """Scores (query, text) pairs with the profile's providers, tried in order: the local model (Qwen3-Reranker or
    a cross-encoder), a rerank server ("http"), or none. It knows nothing of candidates: the core orders them by
    these scores. Never raises to the caller for a scoring problem: what no provider scored gets None. A query that
    comes while the local model is still loading (or being exported to ONNX) gets no scores at once; the load goes
    on meanwhile.

    `switch(profile)` replaces the profile and its models live; the Memory facade calls it from `switch_profile`.
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
        # Where the model goes: the Memory facade resolves "auto" once for all models; None resolves it here.
        self._target_device = device
        self._providers = [Provider(settings, self._model_name) for settings in provider_chain(profile.reranker)]
        self._lock = threading.Lock()  # guards the providers' load state and which providers are current
        self._last_error: str | None = None
        self._last_switch_error: str | None = None
        self._cache = ScoreCache(profile.reranker.cache_size)
        self._stats = RerankStats()
        self._worker = WorkerThread(f"reranker-{profile.name}", queue_size)
        self._loader = WorkerThread(f"reranker-loader-{profile.name}")
        self._closed = False
        if profile.reranker.preload:
            self._start_loading(warm=True)

    # --- public API --------------------------------------------------------------------------------------------

    @property
    def profile(self) -> MemoryProfile:
        return self._profile

    @property
    def _backend(self) -> Backend | None:
        """The first provider's backend, once loaded."""
        return self._providers[0].backend if self._providers else None

    @property
    def depth(self) -> int:
        """How many candidates a recall offers: the profile's `candidates`, or more up to its `max_candidates` where
        the precision measured at load scores them within the time budget."""
        choice = self._providers[0].precision if self._providers else None
        return candidate_depth(self._profile.reranker, None if choice is None else choice.pairs_per_s)

    def score(self, query: str, texts: Sequence[str], *, instruction: str | None = None) -> RerankScores:
        """Blocking form (for threads, CLIs and benchmarks, never the event loop): waits for the models to load
        first."""
        self.load()
        job = self._job(query, texts, instruction)
        future = self._submit(job)
        return job(fallback=True) if future is None else future.result()

    async def ascore(self, query: str, texts: Sequence[str], *, instruction: str | None = None) -> RerankScores:
        """Async form, the recall path: the work runs on the service's worker thread; the event loop only waits.
        It does not wait for a model that is still loading (its texts get no score)."""
        job = self._job(query, texts, instruction)
        future = self._submit(job)
        return job(fallback=True) if future is None else await asyncio.wrap_future(future)

    def load(self, timeout: float | None = None) -> bool:
        """Start loading every provider not loaded yet and wait until each load has finished, either way (blocking).
        True when some provider can score."""
        providers = self._start_loading()
        ends = None if timeout is None else time.monotonic() + timeout
        for provider in providers:
            provider.settled.wait(None if ends is None else max(0.0, ends - time.monotonic()))
        return any(provider.backend is not None for provider in providers)

    async def aload(self) -> bool:
        """`load` without blocking the event loop: for a CLI that wants its one query reranked."""
        return await asyncio.to_thread(self.load)

    async def tokenizers_loaded(self) -> None:
        """Wait until every load under way is past its tokenizer. Parsing one holds the GIL for hundreds of ms, so
        memory waits for it as it opens, before it takes members' messages; the model itself (weights, an ONNX
        session) keeps loading in the background and lets the event loop run."""
        with self._lock:
            loading = [provider for provider in self._providers if provider.loading]
        await asyncio.to_thread(lambda: [provider.tokenizer_settled.wait() for provider in loading])

    def status(self) -> RerankerStatus:
        """The first provider's state at the top level (backend, dtype, loaded, ...), every provider's in
        `providers`, and the last hour's figures."""
        first = self._providers[0] if self._providers else Provider(ProviderSettings("none"), self._model_name)
        prefixes = [getattr(p.backend, "constant_prefixes", None) for p in self._providers]
        return RerankerStatus(
            profile=self._profile.name,
            provider=" → ".join(p.kind for p in self._providers) or "none",
            model=self._model_name,
            device=first.device,
            backend=getattr(first.backend, "backend", None),
            dtype=getattr(first.backend, "dtype", self._profile.dtype),
            loaded=first.backend is not None,
            loading=first.loading,
            available=first.load_error is None,
            reason=first.load_error,
            last_error=self._last_error,
            last_switch_error=self._last_switch_error,
            providers=tuple(p.describe() for p in self._providers),
            queue_depth=self._worker.depth,
            cache_entries=len(self._cache),
            cache_hits=self._cache.hits,
            cache_misses=self._cache.misses,
            prefix_cache_hits=next((c.hits for c in prefixes if c is not None), None),
            precision=None if first.precision is None else first.precision.short(),
            depth=self.depth,
            last_hour=self._stats.summary(),
        )

    async def switch(self, profile: MemoryProfile, reranker_model: str | None = None, *,
                     device: str | None = None) -> bool:
        """Load what `profile` needs off the loop, then swap on the worker after the work already queued.

        On failure the old profile and models stay and the reason is in `status().last_switch_error`.
        """
        model_name = reranker_model or profile.reranker.model
        providers = [Provider(settings, model_name) for settings in provider_chain(profile.reranker)]
        try:
            for provider in providers:  # loaded before the swap, so a model that cannot load fails the switch
                provider.backend, provider.device = await asyncio.to_thread(
                    self._build_backend, profile, provider, device)
                provider.settled.set()
        except Exception as exc:
            for provider in providers:
                provider.close()
            self._last_switch_error = load_failure(model_name, exc, profile)
            log.debug("Loading the reranker %s failed", model_name, exc_info=True)
            log.warning("profile switch to %s failed, keeping %s: %s",
                        profile.name, self._profile.name, self._last_switch_error)
            return False

        def swap() -> None:
            with self._lock:
                old, self._providers = self._providers, providers
                self._profile, self._model_name, self._target_device = profile, model_name, device
                self._last_switch_error = None
                self._cache = ScoreCache(profile.reranker.cache_size)
                self._stats = RerankStats()
            for provider in old:
                provider.close()

        await asyncio.wrap_future(await asyncio.to_thread(self._worker.submit, swap, block=True))
        log.info("reranker switched to profile %s (%s)", profile.name, model_name)
        return True

    def close(self) -> None:
        """Let a load under way finish (an ONNX export is not cut in the middle), finish queued work, stop both
        threads and free the models."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loading = [p.model_name for p in self._providers if p.loading]
        if loading:
            log.info("waiting for the reranker %s to finish loading before closing", ", ".join(loading))
        self._loader.stop(timeout=None)
        self._worker.stop(timeout=None)
        for provider in self._providers:
            provider.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # --- loading (any thread starts it; the loader thread runs it) -----------------------------------------------

    def _start_loading(self, warm: bool = False) -> list[Provider]:
        """Start the load of every provider that has none yet (an http one is ready at once); the current providers.
        A failed load is not retried until a profile switch."""
        with self._lock:
            providers = list(self._providers)
            if self._closed:
                return providers
            for provider in providers:
                if provider.backend is not None or provider.loading or provider.load_error is not None:
                    continue
                if provider.kind == "http":
                    provider.backend, provider.device = self._build_backend(self._profile, provider, None)
                    provider.settled.set()
                    continue
                provider.loading = True
                self._loader.submit(self._load, provider, self._profile, self._target_device, warm)
        return providers

    def _load(self, provider: Provider, profile: MemoryProfile, device: str | None, warm: bool) -> None:
        """Loader thread: build the backend, then hand it over (or drop it if the service moved on meanwhile)."""
        backend = loaded_on = error = None
        if not self._closed:
            try:
                try:
                    tokenizer = load_tokenizer(provider.model_name)
                finally:
                    provider.tokenizer_settled.set()
                backend, loaded_on = self._build_backend(profile, provider, device, tokenizer)
                if warm and hasattr(backend, "warm_up"):
                    backend.warm_up(profile.reranker.instruction or DEFAULT_INSTRUCTION)
            except Exception as exc:
                # One line saying what to do (said once: a failed load is not retried until a profile switch);
                # the traceback at DEBUG.
                error = load_failure(provider.model_name, exc, profile)
                log.warning("%s: %s", UNAVAILABLE, error)
                log.debug("Loading the reranker %s failed", provider.model_name, exc_info=True)
        with self._lock:
            current = not self._closed and any(p is provider for p in self._providers)
            provider.loading = False
            provider.tokenizer_settled.set()
            if current:
                provider.backend, provider.device = backend, loaded_on
                provider.load_error = error if backend is None else None
            else:
                provider.load_error = error or "the service moved on before the load finished"
        if not current and backend is not None:
            backend.close()
        provider.settled.set()

    def _build_backend(self, profile: MemoryProfile, provider: Provider,
                       device: str | None, tokenizer: Any = None) -> tuple[Backend, str | None]:
        settings = profile.reranker
        if provider.kind == "http":
            return HttpScorer(provider.settings.http_url or "", provider.model_name, provider.settings.http_api), None
        hardware = self._detector.detect()
        device = device or resolve_device(profile, hardware)
        started = time.perf_counter()
        scorer: LocalBackend
        if settings.precisions and device == "cpu":  # measured once per machine, on this (the loader) thread
            scorer, provider.precision = build_measured_scorer(
                provider.model_name, settings, self._export_dir, hardware,
                settings.instruction or DEFAULT_INSTRUCTION, threads=torch_threads(), tokenizer=tokenizer)
        else:
            scorer = build_local_scorer(provider.model_name, backend=settings.backend, device=device,
                                        dtype=profile.dtype, max_length=settings.max_length,
                                        export_root=self._export_dir, int8=settings.int8, tokenizer=tokenizer)
        log.info("reranker %s loaded on %s (%s, %s) in %.1f s", provider.model_name, device, scorer.backend,
                 scorer.dtype, time.perf_counter() - started)
        return scorer, device

    # --- worker side -------------------------------------------------------------------------------------------

    def _submit(self, job: Callable[..., RerankScores]) -> Future[RerankScores] | None:
        if self._closed:
            log.warning("reranker is closed; leaving the texts unscored (first-stage order)")
            return None
        try:
            return self._worker.submit(job, block=False)
        except queue.Full:
            log.warning("reranker queue full (%d waiting); leaving the texts unscored (first-stage order)",
                        self._worker.capacity)
            return None

    def _job(self, query: str, texts: Sequence[str], instruction: str | None) -> Callable[..., RerankScores]:
        # The budget starts now: time spent waiting in the queue is part of the recall's wait.
        budget_ms = self._profile.reranker.time_budget_ms
        deadline = time.monotonic() + budget_ms / 1000 if budget_ms > 0 else None
        texts = list(texts)

        def run(fallback: bool = False) -> RerankScores:
            settings = self._profile.reranker
            if fallback or not texts or not self._providers:
                return RerankScores((None,) * len(texts))
            head = texts[: self.depth]
            scored = self._score(query, head, instruction or settings.instruction or DEFAULT_INSTRUCTION, deadline)
            return replace(scored, scores=scored.scores + (None,) * (len(texts) - len(head)))

        return run

    def _score(self, query: str, docs: list[str], instruction: str, deadline: float | None) -> RerankScores:
        """The providers in order, each with its cached scores first: one that fails, times out or scores nothing
        hands the texts to the next; one that scores part of them keeps the rest unscored, so a recall's scores all
        come from one model. The scores, the label of what scored them, and what this call took from the cache."""
        ready = [p for p in self._start_loading() if p.backend is not None]
        scores: list[float | None] = [None] * len(docs)
        if not ready:
            return RerankScores(tuple(scores))
        started, cached, by = time.perf_counter(), 0, ready[0]
        for n, provider in enumerate(ready):
            keys = [(provider.model_name, instruction, query, doc) for doc in docs]
            scores = [self._cache.get(key) for key in keys]
            missing = [i for i, score in enumerate(scores) if score is None]
            cached += len(docs) - len(missing)
            if missing and (deadline is None or time.monotonic() < deadline):
                fresh = self._score_with(provider, query, [docs[i] for i in missing], instruction, deadline,
                                         last=n == len(ready) - 1)
                for i, value in zip(missing, fresh, strict=True):
                    scores[i] = value
                    if value is not None:
                        self._cache.put(keys[i], value)
            if any(score is not None for score in scores):
                by = provider
                break
        scored = sum(score is not None for score in scores)
        self._stats.record(1000 * (time.perf_counter() - started), len(docs), scored, cached, by.label)
        return RerankScores(tuple(scores), by.label if scored else None, len(docs), cached)

    def _score_with(self, provider: Provider, query: str, docs: list[str], instruction: str,
                    deadline: float | None, last: bool) -> list[float | None]:
        then = "first-stage order kept" if last else "trying the next provider"
        try:
            return provider.score(query, docs, instruction, self._profile.reranker.batch_size,
                                  provider.deadline(deadline, time.monotonic()))
        except HttpRerankError as exc:
            provider.last_error = self._last_error = str(exc)
            log.warning("reranking skipped, %s: %s", then, exc)
        except Exception as exc:
            provider.last_error = self._last_error = f"{type(exc).__name__}: {exc}"
            log.exception("reranking by %s failed, %s", provider.label, then)
        return [None] * len(docs)
