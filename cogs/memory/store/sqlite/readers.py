"""ReaderPool: read-only SQLite connections on their own threads, so searches never queue behind ingest writes."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

__all__ = ("ReaderPool",)

T = TypeVar("T")

READER_PRAGMAS = (
    "PRAGMA query_only = ON",
    "PRAGMA busy_timeout = 5000",
    # The join from FTS5 hits to their messages reads pages all over a big table; SQLite's default 2 MiB cache
    # re-reads them from the OS on every search (measured 15-20% slower keyword side at 1M messages).
    "PRAGMA cache_size = -65536",
)


class ReaderPool:
    """A few threads, each with its own connection to one WAL database; a call runs whole on one of them.

    WAL lets these read while the writer (aiosqlite's connection) writes; each sees the last committed state.
    A call gets the connection and does all its queries in one hop off the event loop.
    """

    def __init__(self, path: Path, readers: int = 2) -> None:
        self.path = path
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="sqlite-reader")

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(connection, *args)`` on a reader thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, function, args)

    def _call(self, function: Callable[..., T], args: tuple[Any, ...]) -> T:
        return function(self._connection(), *args)

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            # check_same_thread=False only so close() can close it from another thread once its thread is idle.
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            for pragma in READER_PRAGMAS:
                connection.execute(pragma)
            self._local.connection = connection
            with self._lock:
                self._connections.append(connection)
        return connection

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._shutdown)

    def _shutdown(self) -> None:
        self._executor.shutdown(wait=True)
        with self._lock:
            for connection in self._connections:
                connection.close()
            self._connections.clear()
