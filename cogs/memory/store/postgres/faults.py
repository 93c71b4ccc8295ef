"""A lost PostgreSQL in the project's words: asyncpg's and the socket's connection failures become one
``DatabaseUnavailableError`` naming the server and what to do, at the store seam (``GuardedPool``), which logs an
outage once as it begins and once as it ends. Opening tells a server that is away (try again later) from what only a
person can fix (``opening``: a refused login, a missing database)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import asyncpg

from ..protocol import DatabaseUnavailableError, StoreOpenError

__all__ = ("CONNECTION_ERRORS", "GuardedPool", "opening", "reaching", "unavailable")

log = logging.getLogger(__name__)

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
        return DatabaseUnavailableError(_login_refused(where, error))
    return DatabaseUnavailableError(f"PostgreSQL at {where} cannot be reached ({_why(error)}); start the server or "
                                    "fix DATABASE_URL (or --to), then run this again")


def _login_refused(where: str, error: BaseException) -> str:
    return f"PostgreSQL at {where} refused the login ({error}); fix the user or password in DATABASE_URL (or --to)"


def _why(error: BaseException) -> str:
    # A unix socket that is not there is a FileNotFoundError naming no file: say what it means.
    if isinstance(error, FileNotFoundError):
        return "no server listens on its socket"
    return str(error) or type(error).__name__


@contextlib.asynccontextmanager
async def opening(url: str) -> AsyncIterator[None]:
    """Around opening the store: a server that is away (stopped, starting, not answering) raises
    ``DatabaseUnavailableError``, and trying again later may work; what only a person can fix raises
    ``StoreOpenError`` saying what to fix: a refused login, a database that does not exist, a statement of the
    schema the server refuses (pgvector missing, say)."""
    where = server_of(url)
    try:
        yield
    except LOGIN_ERRORS as error:
        raise StoreOpenError(_login_refused(where, error)) from error
    except asyncpg.InvalidCatalogNameError as error:
        raise StoreOpenError(f"PostgreSQL at {where} has no such database ({error}); create it (createdb NAME) or "
                             "fix the database's name in DATABASE_URL") from error
    except CONNECTION_ERRORS as error:
        raise unavailable(url, error) from error
    except asyncpg.InterfaceError as error:
        if not closed_connection(error):
            raise
        raise unavailable(url, error) from error
    except asyncpg.PostgresError as error:  # a server that answered, and refused: trying again changes nothing
        raise StoreOpenError(f"PostgreSQL at {where} refused memory's schema ({type(error).__name__}: {error}); fix "
                             "that and start again") from error


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
    """An asyncpg pool whose every call raises a lost server as ``DatabaseUnavailableError``.

    Every part of memory meets an outage through here (the writer, the vector filler, names, commands), so this is
    where it is logged: one WARNING as the first call fails, one INFO as the first call after it succeeds; the parts
    themselves say at DEBUG what they keep and retry.
    """

    def __init__(self, pool: asyncpg.Pool, url: str) -> None:
        self.pool = pool
        self._url = url
        self.away = False  # the last call met a lost server

    @contextlib.asynccontextmanager
    async def _reaching(self) -> AsyncIterator[None]:
        try:
            async with reaching(self._url):
                yield
        except DatabaseUnavailableError as error:
            if not self.away:
                self.away = True
                log.warning("%s: memory keeps what it is given and tries again until the server answers",
                            str(error).split("; ", 1)[0])
            raise
        if self.away:
            self.away = False
            log.info("PostgreSQL at %s answers again", server_of(self._url))

    async def fetch(self, sql: str, *params: Any) -> list[asyncpg.Record]:
        async with self._reaching():
            return cast(list[asyncpg.Record], await self.pool.fetch(sql, *params))

    async def fetchrow(self, sql: str, *params: Any) -> asyncpg.Record | None:
        async with self._reaching():
            return await self.pool.fetchrow(sql, *params)

    async def fetchval(self, sql: str, *params: Any) -> Any:
        async with self._reaching():
            return await self.pool.fetchval(sql, *params)

    async def execute(self, sql: str, *params: Any) -> str:
        async with self._reaching():
            return cast(str, await self.pool.execute(sql, *params))

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; a failure to get one, or of a statement run on it, raises as the calls above."""
        async with self._reaching(), self.pool.acquire() as conn:
            yield conn

    async def close(self) -> None:
        await self.pool.close()
