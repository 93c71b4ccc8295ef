"""Which store memory runs on: the SQLite file (the default) or PostgreSQL + pgvector when a DATABASE_URL is set.

Each store package builds its own ``StoreBackend`` (store/protocol.py): the store, and how to build its vector
indexes, search engine and history ledger. Memory only ever sees that protocol.
"""

from __future__ import annotations

from pathlib import Path

from .protocol import StoreBackend

__all__ = ("open_backend",)


async def open_backend(db_path: Path, database_url: str | None) -> StoreBackend:
    if database_url is None:
        from .sqlite.backend import open_backend as open_sqlite

        return await open_sqlite(db_path)
    from .postgres.backend import open_backend as open_postgres  # asyncpg only where PostgreSQL is used

    return await open_postgres(database_url)
