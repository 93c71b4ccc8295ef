"""The models a profile asks for: the embedding service and the reranker built for it, and a live switch of a running
memory to another profile's models (the new ones load beside the old ones; nothing is swapped until they have)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .ingest.queue import IngestQueue
from .ingest.reembed import reembed_all
from .runtime.hub_probe import settle_hub_mode
from .runtime.profile import MemoryProfile, ProfileError, provider_chain, reranks, resolve_device
from .store.protocol import StoreBackend, VectorIndexes
from .vectors.embedding import EmbeddingService

if TYPE_CHECKING:
    from .rerank.service import RerankerService

__all__ = ("ModelsInUse", "build_reranker", "embedder_for", "needs_hub", "switch_profile")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelsInUse:
    """What memory embeds, indexes and reranks with under one profile."""

    profile: MemoryProfile
    embedder: EmbeddingService
    indexes: VectorIndexes
    reranker: RerankerService | None


def embedder_for(profile: MemoryProfile, device: str, onnx_dir: Path | None) -> EmbeddingService:
    return EmbeddingService(profile.embedding_model, device=device, dtype=profile.dtype,
                            batch_size=profile.embedding_batch_size, onnx_dir=onnx_dir, **_prefixes(profile))


def _prefixes(profile: MemoryProfile) -> dict[str, str | None]:
    return {"query_prefix": profile.embedding_query_prefix, "passage_prefix": profile.embedding_passage_prefix}


def needs_hub(profile: MemoryProfile) -> bool:
    """Whether loading this profile's models may ask the model hub: a local reranker named by a hub id."""
    return any(chain.provider == "local" for chain in provider_chain(profile.reranker)) and not (
        Path(profile.reranker.model).expanduser().exists())


def build_reranker(profile: MemoryProfile, device: str, onnx_dir: Path | None) -> RerankerService | None:
    """The profile's reranker, not loaded yet; None when the profile does not rerank. Blocks up to 2 s the first
    time when the hub may be asked (``settle_hub_mode``: offline at once when it cannot be reached)."""
    if not reranks(profile):
        return None
    if needs_hub(profile):
        settle_hub_mode()
    from .rerank.service import RerankerService  # loads torch: only when a profile reranks

    if onnx_dir is None:
        return RerankerService(profile, device=device)
    return RerankerService(profile, device=device, export_dir=onnx_dir)


async def switch_profile(current: ModelsInUse, profile: MemoryProfile, backend: StoreBackend, ingest: IngestQueue,
                         use: Callable[[ModelsInUse], None], *, index_dir: Path,
                         onnx_dir: Path | None) -> RerankerService | None:
    """Switch from ``current`` to ``profile``'s models; returns the reranker to keep (None: the profile has none).

    ``use`` is called, under the ingest write lock, with the models to search with from then on (the reranker, if
    any, switched in place). On failure ``ProfileError`` says why and nothing has changed. A new embedding model
    re-embeds every stored message before it is used.
    """
    device = await asyncio.to_thread(resolve_device, profile)
    if needs_hub(profile):  # the probe (up to 2 s, once a process) off the loop, before the new models load
        await asyncio.to_thread(settle_hub_mode)
    same_embedder = (profile.embedding_model, device, profile.dtype, _prefixes(profile)) == (
        current.profile.embedding_model, current.embedder.device, current.profile.dtype, _prefixes(current.profile))
    embedder, reranker = current.embedder, current.reranker
    if not same_embedder:
        embedder = embedder_for(profile, device, onnx_dir)
        await embedder.start()  # a model that cannot load raises here, with nothing changed yet
    if reranker is not None and reranks(profile) and not await reranker.switch(profile, device=device):
        if embedder is not current.embedder:
            await embedder.close()
        raise ProfileError(f"the reranker of profile {profile.name!r} did not load: "
                           f"{reranker.status().last_switch_error}")
    embedder.batch_size = profile.embedding_batch_size
    await ingest.settle(vectors=False)
    async with ingest.write_lock:
        indexes = current.indexes
        if embedder.model_name != current.embedder.model_name:
            await reembed_all(backend.store, embedder)
            await backend.store.resolve_embedded(embedder.model_name)
            await current.indexes.close()
            indexes = backend.indexes(index_dir, embedder.model_name, embedder.dimension)
            await indexes.load_all()
        ingest.use(embedder, indexes, batch_size=profile.ingest_batch_size)
        use(ModelsInUse(profile, embedder, indexes, reranker))
    if current.embedder is not embedder:
        await current.embedder.close()
    if reranker is not None and not reranks(profile):
        await reranker.aclose()
        reranker = None
    elif reranker is None:
        reranker = build_reranker(profile, device, onnx_dir)
    log.info("Memory switched to profile %s", profile.name)
    return reranker
