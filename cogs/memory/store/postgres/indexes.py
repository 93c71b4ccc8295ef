"""DatabaseIndexes: the vector-index registry's part when vectors live in pgvector — PostgreSQL keeps them.

Ingest and Memory talk to ``VectorIndexes`` (store/protocol.py; on SQLite, vectors/index.IndexRegistry). With the
PostgreSQL store the HNSW index inside the database follows every committed write by itself, so there is
nothing to add, remove, save or rebuild here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...vectors.index import IndexUsage

if TYPE_CHECKING:
    from .store import PostgresStore

__all__ = ("DatabaseIndexes",)


class DatabaseIndexes:
    """VectorIndexes with nothing to do: every method is what pgvector already did in the write."""

    kind = "pgvector-hnsw"

    def __init__(self, store: PostgresStore, model: str, dimension: int) -> None:
        self._store = store
        self.model = model
        self.dimension = dimension
        self.directory: Path | None = None

    async def load_all(self) -> None:
        """Nothing to load: the database's HNSW index is always current."""

    async def add(self, guild_id: int, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Nothing to add: ``PostgresStore.write`` stored the vectors in the same transaction."""

    async def remove(self, guild_id: int, ids: np.ndarray) -> int:
        return 0

    async def drop(self, guild_id: int) -> None:
        """Nothing to drop: deleting the guild's messages deleted their vectors (ON DELETE CASCADE)."""

    async def save_dirty(self) -> None:
        """Nothing to save: PostgreSQL made the vectors durable at commit."""

    async def remove_stale_files(self) -> None:
        """No index files."""

    async def close(self) -> None:
        """Nothing held."""

    async def usage(self, guild_id: int) -> IndexUsage:
        """The guild's vectors in the database; their index is PostgreSQL's, in neither memory nor a file here."""
        return IndexUsage(await self._store.count_vectors(guild_id, self.model), 0, 0, self.kind)
