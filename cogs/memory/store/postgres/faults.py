"""A lost PostgreSQL in the project's words: asyncpg's and the socket's connection failures become one
``DatabaseUnavailableError`` naming the server and what to do, at the store seam (``GuardedPool``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import asyncpg

from ..protocol import DatabaseUnavailableError

__all__ = ("CONNECTION_ERRORS", "GuardedPool", "reaching", "unavailable")

# What a server that went away, is restarting, refuses the login or cannot be reached raises; never a query's own
# error. OSError covers a refused TCP connection and a missing unix socket (FileNotFoundError), TimeoutError a host
# that does not answer.
LOGIN_ERRORS = (asyncpg.InvalidAuthorizationSpecificationError,)  # 28000, 28P01 (a wrong password)
CONNECTION_ERRORS = (OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError,
                     asyncpg.AdminShutdownError, asyncpg.CrashShutdownError, asyncpg.TooManyConnectionsError,
                     *LOGIN_ERRORS)


def server_of(url: str) -> str:
    """``url`` without its password: user, host (or socket folder), port and database."""
    parts = urlsplit(url)
    host = parts.hostname or parse_qs(parts.query).get("host", ["localhost"])[0]
    port = f":{parts.port}" if parts.port else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"{user}{host}{port}{parts.path or '/'}"


def unavailable(url: str, error: BaseException) -> DatabaseUnavailableError:
    """``error`` (one of ``CONNECTION_ERRORS``) as one line: what failed at which server, and what to do."""
    where = server_of(url)
    if isinstance(error, LOGIN_ERRORS):
        return DatabaseUnavailableError(f"PostgreSQL at {where} refused the login ({error}); fix the user or "
                                        "password in DATABASE_URL (or --to)")
    # A unix socket that is not there is a FileNotFoundError naming no file: say what it means.
    why = "no server listens on its socket" if isinstance(error, FileNotFoundError) else (
        str(error) or type(error).__name__)
    return DatabaseUnavailableError(f"PostgreSQL at {where} cannot be reached ({why}); start the server or fix "
                                    "DATABASE_URL (or --to), then run this again")


@contextlib.asynccontextmanager
async def reaching(url: str) -> AsyncIterator[None]:
    """Raise a connection failure inside as ``DatabaseUnavailableError`` (the original as its cause)."""
    try:
        yield
    except CONNECTION_ERRORS as error:
        raise unavailable(url, error) from error
    except asyncpg.InterfaceError as error:  # also raised for misuse (two queries at once): only a closed one is lost
        if not closed_connection(error):
            raise
        raise unavailable(url, error) from error


def closed_connection(error: asyncpg.InterfaceError) -> bool:
    """Whether asyncpg refused a call because the server closed the connection before it (its only sign of that)."""
    return "connection is closed" in str(error)


class GuardedPool:
    """An asyncpg pool whose every call raises a lost server as ``DatabaseUnavailableError``."""

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self.pool = pool
        self._url = url

    async def fetch(self, sql: str, *params: Any) -> list[asyncpg.Record]:
        async with reaching(self._url):
            return cast(list[asyncpg.Record], await self.pool.fetch(sql, *params))

    async def fetchrow(self, sql: str, *params: Any) -> asyncpg.Record | None:
        async with reaching(self._url):
            return await self.pool.fetchrow(sql, *params)

    async def fetchval(self, sql: str, *params: Any) -> Any:
        async with reaching(self._url):
            return await self.pool.fetchval(sql, *params)

    async def execute(self, sql: str, *params: Any) -> str:
        async with reaching(self._url):
            return cast(str, await self.pool.execute(sql, *params))

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; a failure to get one, or of a statement run on it, raises as the calls above."""
        async with reaching(self._url), self.pool.acquire() as conn:
            yield conn

    async def close(self) -> None:
        await self.pool.close()
