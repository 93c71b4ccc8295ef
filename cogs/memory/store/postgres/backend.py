"""PostgresBackend: the PostgreSQL store with what Memory builds on it — nothing to keep for the vectors (pgvector's
HNSW index lives in the database), the pgvector + tsvector first stage, and the history ledger in the database."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..protocol import VectorIndexes
from .history import PostgresHistory
from .indexes import DatabaseIndexes
from .search import PostgresSearchEngine
from .store import PostgresStore

if TYPE_CHECKING:
    from ...runtime.profile import MemoryProfile
    from ...vectors.embedding import Embedder

__all__ = ("PostgresBackend", "open_backend")


@dataclass(frozen=True, slots=True)
class PostgresBackend:
    store: PostgresStore

    def indexes(self, index_dir: Path, model: str, dimension: int) -> DatabaseIndexes:
        """No index files: ``index_dir`` is not used."""
        return DatabaseIndexes(self.store, model, dimension)

    def search_engine(self, embedder: Embedder, indexes: VectorIndexes,
                      profile: MemoryProfile) -> PostgresSearchEngine:
        return PostgresSearchEngine(self.store, embedder, profile)

    def history(self, write_lock: asyncio.Lock) -> PostgresHistory:
        """Progress in the database; PostgreSQL serialises its own writes, so ``write_lock`` is not needed."""
        return PostgresHistory(self.store)


async def open_backend(database_url: str) -> PostgresBackend:
    return PostgresBackend(await PostgresStore.open(database_url))
