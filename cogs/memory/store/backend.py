"""Which store memory runs on: the SQLite file (the default) or PostgreSQL + pgvector when a DATABASE_URL is set.

Everything store-specific that Memory builds comes from here: the store, its vector indexes and its search engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .sqlite.history import SqliteHistory
from .sqlite.search import SqliteSearchEngine
from .sqlite.store import SqliteStore
from ..vectors.index import IndexRegistry

if TYPE_CHECKING:
    import asyncio

    from ..vectors.embedding import Embedder
    from .history import HistoryLedger
    from ..runtime.profile import MemoryProfile
    from .protocol import Store

__all__ = ("history_for", "indexes_for", "open_store", "search_engine_for")


async def open_store(db_path: Path, database_url: str | None) -> Store:
    if database_url is None:
        return await SqliteStore.open(db_path)
    from .postgres.store import PostgresStore  # asyncpg only where PostgreSQL is used

    return await PostgresStore.open(database_url)


def indexes_for(store: Store, index_dir: Path, model: str, dimension: int) -> Any:
    """FAISS files per guild beside SQLite; nothing to keep with PostgreSQL, whose HNSW index lives in the database."""
    if isinstance(store, SqliteStore):
        return IndexRegistry(store, index_dir, model, dimension)
    from .postgres.indexes import DatabaseIndexes

    return DatabaseIndexes(model, dimension)


def search_engine_for(store: Store, embedder: Embedder, indexes: Any, profile: MemoryProfile) -> Any:
    if isinstance(store, SqliteStore):
        return SqliteSearchEngine(store, embedder, indexes, profile)
    from .postgres.search import PostgresSearchEngine
    from .postgres.store import PostgresStore

    assert isinstance(store, PostgresStore)
    return PostgresSearchEngine(store, embedder, profile)


def history_for(store: Store, write_lock: asyncio.Lock) -> HistoryLedger:
    """Where catch-up and backfill keep their progress: beside the messages, in the same database."""
    if isinstance(store, SqliteStore):
        return SqliteHistory(store, write_lock)
    from .postgres.history import PostgresHistory
    from .postgres.store import PostgresStore

    assert isinstance(store, PostgresStore)
    return PostgresHistory(store)
