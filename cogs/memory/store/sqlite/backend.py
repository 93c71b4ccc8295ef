"""SqliteBackend: the SQLite store with what Memory builds on it — FAISS files per guild, the FTS5 + FAISS first
stage, and the history ledger in the same file."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...vectors.registry import IndexRegistry
from ..protocol import VectorIndexes
from .history import SqliteHistory
from .search import SqliteSearchEngine
from .store import SqliteStore

if TYPE_CHECKING:
    from ...runtime.profile import MemoryProfile
    from ...vectors.embedding import Embedder

__all__ = ("SqliteBackend", "open_backend")


@dataclass(frozen=True, slots=True)
class SqliteBackend:
    store: SqliteStore

    def indexes(self, index_dir: Path, model: str, dimension: int) -> IndexRegistry:
        """FAISS files per guild beside the database."""
        return IndexRegistry(self.store, index_dir, model, dimension)

    def search_engine(self, embedder: Embedder, indexes: VectorIndexes,
                      profile: MemoryProfile) -> SqliteSearchEngine:
        return SqliteSearchEngine(self.store, embedder, indexes, profile)

    def history(self, write_lock: asyncio.Lock) -> SqliteHistory:
        return SqliteHistory(self.store, write_lock)


async def open_backend(db_path: Path) -> SqliteBackend:
    return SqliteBackend(await SqliteStore.open(db_path))
