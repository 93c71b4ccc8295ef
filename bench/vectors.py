"""Vectors shaped like real ones for the scale bench: real MiniLM embeddings of LoCoMo, perturbed, normalised.

LoCoMo's ten conversations hold 5,882 messages, each embedded as ingest embeds it (after the message before it);
a guild with a million is modelled as each of those messages said again in other words. A synthetic vector is a
real message's vector plus noise drawn from the real vectors' own covariance (so it stays inside the subspace real
embeddings occupy instead of drifting towards random directions), scaled so that it sits about as close to its
parent as a real message's nearest distinct neighbour does.
Queries are real question embeddings perturbed the same way. Random unit vectors remain the worst case.

The embeddings are computed once per model and data and cached under ``bench/out/`` (gitignored); LoCoMo itself
is read where it lies and never copied.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cogs.memory.language import keywords as text
from cogs.memory.ingest.queue import stored_content

__all__ = ("CACHE_DIR", "Perturber", "RandomEmbedder", "RealVectors", "RealisticEmbedder", "load_real_vectors",
           "message_keys", "random_units")

log = logging.getLogger(__name__)

CACHE_DIR = Path(__file__).resolve().parent / "out"
# Two messages this close count as the same text ("ok", "haha") when looking for a message's nearest neighbour.
_DUPLICATE_COSINE = 0.98


@dataclass(frozen=True, slots=True)
class RealVectors:
    """Unit MiniLM vectors of every line of messages.jsonl, in file order, as ingest embeds them."""

    messages: np.ndarray


def _fingerprint(model_name: str, inputs: list[str]) -> str:
    """Names the cache by model and by the exact texts embedded, so a change to either embeds again."""
    digest = hashlib.sha256(model_name.encode())
    for line in inputs:
        digest.update(line.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:16]


def load_real_vectors(data: Path, model: object, cache_dir: Path = CACHE_DIR) -> RealVectors:
    """The embeddings of ``data``'s messages by ``model`` (an EmbeddingService), cached on disk.

    Runs the model on the calling thread: call it off the event loop.
    """
    passages = model.prefixes.passages(message_inputs(data / "messages.jsonl"))  # type: ignore[attr-defined]
    model_name: str = model.model_name  # type: ignore[attr-defined]
    cache = cache_dir / f"locomo-inputs-{_fingerprint(model_name, passages)}.npz"
    if cache.exists():
        with np.load(cache) as saved:
            return RealVectors(saved["messages"])
    log.info("Embedding %s with %s once; cached in %s", data, model_name, cache)
    messages = model.embed_sync(passages)  # type: ignore[attr-defined]
    cache.parent.mkdir(parents=True, exist_ok=True)
    temporary = cache.with_name(cache.name + ".tmp.npz")
    np.savez(temporary, messages=messages)
    temporary.replace(cache)
    return RealVectors(messages)


def _rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def message_inputs(path: Path) -> list[str]:
    """What ingest would embed for each message: the message after the one before it in its conversation (its
    ``channel``; a file without channels is one conversation)."""
    inputs: list[str] = []
    previous: dict[str, tuple[str, str]] = {}
    for row in _rows(path):
        content = stored_content(row["text"])
        channel = row.get("channel", "")
        inputs.append(text.embedding_input(row["author"], content, previous.get(channel)))
        previous[channel] = (row["author"], content)
    return inputs


def message_keys(path: Path) -> dict[str, int]:
    """The last line ingest embeds for each message ("author: content"), to its first row in messages.jsonl."""
    keys: dict[str, int] = {}
    for row_number, row in enumerate(_rows(path)):
        keys.setdefault(text.embedding_input(row["author"], stored_content(row["text"]), None), row_number)
    return keys


def random_units(count: int, dimension: int, seed: int) -> np.ndarray:
    """Unit vectors uniform on the sphere: no clusters, the worst case for an approximate index."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dimension), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class Perturber:
    """Draws unit vectors near given parents, with noise shaped like the spread of real embeddings."""

    def __init__(self, basis: np.ndarray, scale: float) -> None:
        self._basis = basis.astype(np.float32)  # noise = z @ basis, z standard normal
        self.scale = scale

    @classmethod
    def fit(cls, real: np.ndarray, seed: int = 0) -> Perturber:
        """Covariance of ``real``; the scale puts a child at the median nearest-distinct-neighbour cosine."""
        centred = real - real.mean(axis=0)
        covariance = centred.T @ centred / max(len(real) - 1, 1)
        values, vectors = np.linalg.eigh(covariance)
        basis = (vectors * np.sqrt(np.clip(values, 0.0, None))).T
        target = nearest_distinct_cosine(real)
        perturber = cls(basis, 1.0)
        rng = np.random.default_rng(seed)
        sample = real[rng.choice(len(real), size=min(len(real), 2_000), replace=False)]
        low, high = 0.0, 4.0
        for _ in range(30):  # bisection: cosine to the parent falls as the scale grows
            perturber.scale = (low + high) / 2
            child = perturber.perturb(sample, np.random.default_rng(seed))
            if float(np.median(np.sum(child * sample, axis=1))) > target:
                low = perturber.scale
            else:
                high = perturber.scale
        log.info("Perturbation scale %.3f: median cosine to parent %.3f", perturber.scale, target)
        return perturber

    def perturb(self, parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        noise = rng.standard_normal((len(parents), len(self._basis)), dtype=np.float32) @ self._basis
        children = parents + self.scale * noise
        return (children / np.linalg.norm(children, axis=1, keepdims=True)).astype(np.float32)


def nearest_distinct_cosine(real: np.ndarray) -> float:
    """Median over messages of the cosine to the nearest other message that is not (nearly) the same text."""
    best = np.full(len(real), -1.0, dtype=np.float32)
    for start in range(0, len(real), 1_024):
        scores = real[start : start + 1_024] @ real.T
        scores[scores >= _DUPLICATE_COSINE] = -1.0
        best[start : start + 1_024] = scores.max(axis=1)
    return float(np.median(best))


class RandomEmbedder:
    """Stands in for EmbeddingService: random unit vectors (the worst case), on its own thread."""

    def __init__(self, model_name: str, dimension: int, batch_size: int) -> None:
        self.model_name = model_name
        self.dimension = dimension
        self.batch_size = batch_size
        self._rng = np.random.default_rng(0)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="random-embedding")

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        vectors = self._rng.standard_normal((len(texts), self.dimension), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.embed_sync, list(texts))

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        return await self.embed(queries)


class RealisticEmbedder(RandomEmbedder):
    """Stands in for EmbeddingService: each message's real vector (found by its last line), perturbed."""

    def __init__(self, model_name: str, real: RealVectors, keys: dict[str, int], perturber: Perturber,
                 batch_size: int) -> None:
        super().__init__(model_name, real.messages.shape[1], batch_size)
        self._real, self._keys, self._perturber = real, keys, perturber
        self.unmatched = 0

    def embed_sync(self, texts: list[str]) -> np.ndarray:
        parents = np.array([self._parent(text_) for text_ in texts], dtype=np.int64)
        return self._perturber.perturb(self._real.messages[parents], self._rng)

    def _parent(self, embedded: str) -> int:
        candidates = [embedded] + [embedded[i + 1 :] for i, char in enumerate(embedded) if char == "\n"]
        for candidate in candidates:
            if candidate in self._keys:
                return self._keys[candidate]
        self.unmatched += 1
        return int(self._rng.integers(len(self._real.messages)))
