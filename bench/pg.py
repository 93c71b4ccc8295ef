"""A scratch database for a benchmark run on a PostgreSQL server: created empty, dropped at the end.

A benchmark measures ingest from nothing, so it never writes into the database the URL names (which may hold a
real memory): it creates its own beside it on the same server, and the URL's role needs CREATEDB.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import asyncpg

__all__ = ("scratch_database",)


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@asynccontextmanager
async def scratch_database(url: str, label: str) -> AsyncIterator[str]:
    """The URL of a new, empty database named ``bench_<label>_<random>`` on ``url``'s server; dropped afterwards."""
    name = f"bench_{label}_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield _with_database(url, name)
    finally:
        admin = await asyncpg.connect(url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
