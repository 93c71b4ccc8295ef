"""DatabaseIndexes: the vector-index registry's part when vectors live in pgvector — PostgreSQL keeps them.

Ingest and Memory talk to ``VectorIndexes`` (store/protocol.py; on SQLite, vectors/index.IndexRegistry). With the
PostgreSQL store the HNSW index inside the database follows every committed write by itself, so there is
nothing to add, remove, save or rebuild here; ``search`` reads the nearest vectors from the database.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...vectors.index import IndexUsage

if TYPE_CHECKING:
    from .store import PostgresStore

__all__ = ("DatabaseIndexes",)

# A guild's nearest vectors by inner product (the score the PostgreSQL first stage gives, search.py), among the allowed
# rows when a list is given. Ordered by the score, so the answer is exact whatever the filter: the first stage itself
# searches through the HNSW index with its filters in SQL (search.py), this serves callers of VectorIndexes.
SELECT_NEAREST = """
SELECT e.message_rowid, -(e.vector <#> $1) AS score
FROM embeddings AS e JOIN messages AS m ON m.id = e.message_rowid
WHERE m.guild_id = $2 AND e.model = $3 AND ($4::bigint[] IS NULL OR e.message_rowid = ANY($4::bigint[]))
ORDER BY score DESC, e.message_rowid LIMIT $5
"""


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

    async def loaded(self, guild_id: int) -> None:
        """Nothing to load: the database's own index."""

    async def close(self) -> None:
        """Nothing held."""

    async def search(self, guild_id: int, queries: np.ndarray, k: int,
                     allowed_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (scores, row ids) per query row, best first; missing results have id -1 and score -inf."""
        rows = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        width = max(k, 0)
        scores = np.full((len(rows), width), -np.inf, dtype=np.float32)
        ids = np.full((len(rows), width), -1, dtype=np.int64)
        allowed = None if allowed_ids is None else [int(rowid) for rowid in allowed_ids]
        for row, query in enumerate(rows if width else ()):
            found = await self._store.fetch(SELECT_NEAREST, query, guild_id, self.model, allowed, width)
            for column, (rowid, score) in enumerate(found):
                ids[row, column], scores[row, column] = rowid, score
        return scores, ids

    async def usage(self, guild_id: int) -> IndexUsage:
        """The guild's vectors in the database; their index is PostgreSQL's, in neither memory nor a file here."""
        return IndexUsage(await self._store.count_vectors(guild_id, self.model), 0, 0, self.kind)
