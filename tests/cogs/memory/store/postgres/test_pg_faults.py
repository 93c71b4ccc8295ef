"""A PostgreSQL that goes away (stopped, refusing the login, unreachable) is one line from the CLI, a summary of
what was stored, exit 1 and no traceback; a real server (pgserver) is stopped and started mid-run."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.ingest.queue import IngestQueue, RetryPolicy
from cogs.memory.memory import Memory
from cogs.memory.store.postgres.indexes import DatabaseIndexes
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.records import MessageRecord
from cogs.memory.ingest.spool import SPOOL_NAME, IngestSpool
from tests.fixtures.core import RecordFactory
from tests.fixtures.postgres import StoppableServer, fresh_database
from tests.fixtures.stores import MODEL


def export_file(path: Path, first_id: int, contents: list[str]) -> Path:
    messages = [{
        "id": str(first_id + i), "type": "Default", "timestamp": f"2024-05-01T12:{i:02d}:00+00:00",
        "timestampEdited": None, "content": content,
        "author": {"id": "5", "name": "alice", "discriminator": "0", "nickname": None, "isBot": False},
        "attachments": [], "embeds": [],
    } for i, content in enumerate(contents)]
    path.write_text(json.dumps({"guild": {"id": "1", "name": "Picnic Club"},
                                "channel": {"id": "20", "type": "GuildTextChat", "categoryId": None,
                                            "name": "general"},
                                "messages": messages}), encoding="utf-8")
    return path


@pytest.fixture
async def server_url(stoppable_postgres: StoppableServer) -> str:
    return await fresh_database(stoppable_postgres.url)


@pytest.fixture
def cli(tmp_path: Path, tiny_profiles_dir: Path, monkeypatch: pytest.MonkeyPatch):
    async def call(*argv: str, url: str) -> tuple[int, str, str]:
        monkeypatch.setenv("DATABASE_URL", url)
        out, err = io.StringIO(), io.StringIO()
        base = ["--db", str(tmp_path / "data" / "m.sqlite3"), "--index-dir", str(tmp_path / "idx"),
                "--profile", str(tiny_profiles_dir / "tiny-a.toml")]
        code = await run(parse_args([*base, *argv]), out, err)
        return code, out.getvalue(), err.getvalue()

    return call


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    assert "Traceback" not in caplog.text
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []


async def test_an_import_whose_server_stops_mid_run_says_so_in_one_line_with_a_summary(
        cli, tmp_path: Path, server_url: str, stoppable_postgres: StoppableServer,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    first = export_file(tmp_path / "first.json", 30, ["the picnic moved to Saturday", "bring blankets"])
    second = export_file(tmp_path / "second.json", 40, ["who brings the cake", "I do", "and lemonade"])
    add = Memory.add

    async def stop_before_the_second_file(memory: Memory, record: MessageRecord) -> None:
        if record.message_id == 40:
            await asyncio.to_thread(stoppable_postgres.stop)
        await add(memory, record)

    monkeypatch.setattr(Memory, "add", stop_before_the_second_file)
    caplog.set_level(logging.WARNING)
    code, out, err = await cli("import", str(first), str(second), url=server_url)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"{first}: #general (guild 1): 2 stored, 0 already stored, 0 skipped, 0 rejected"
    assert lines[1].startswith(f"{second}: #general (guild 1): 0 stored, 0 already stored, 0 skipped, 0 rejected, "
                               "3 NOT stored (PostgreSQL at postgres@")
    assert lines[2] == "imported 2 of 2 file(s): 2 stored, 0 already stored, 0 skipped, 0 rejected, 3 NOT stored"
    [line] = error_lines(err)
    assert line.startswith(f"error: 3 messages of {second} were not stored (PostgreSQL at postgres@")
    assert "cannot be reached" in line and "start the server or fix DATABASE_URL" in line
    no_tracebacks(caplog)


async def test_a_search_with_the_server_stopped_is_one_line(cli, server_url: str, stoppable_postgres: StoppableServer,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    await asyncio.to_thread(stoppable_postgres.stop)
    caplog.set_level(logging.WARNING)
    code, out, err = await cli("search", "picnic", "--no-rerank", url=server_url)
    assert (code, out) == (1, "")
    [line] = err.splitlines()
    assert line.startswith("error: PostgreSQL at postgres@") and line.endswith(
        "start the server or fix DATABASE_URL (or --to), then run this again")
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []  # no 2nd line
    no_tracebacks(caplog)


async def test_a_refused_password_is_one_line(cli, server_url: str, stoppable_postgres: StoppableServer) -> None:
    stoppable_postgres.require_password()
    code, out, err = await cli("search", "picnic", "--no-rerank",
                               url=stoppable_postgres.login_url(server_url, "wrong"))
    assert (code, out) == (1, "")
    parts = urlsplit(server_url)
    where = f"memory_bot@{parse_qs(parts.query)['host'][0]}{parts.path}"
    assert err == (f"error: PostgreSQL at {where} refused the login (password authentication failed for user "
                   "\"memory_bot\"); fix the user or password in DATABASE_URL (or --to)\n")


async def test_migrate_to_a_stopped_server_is_one_line(tmp_path: Path, server_url: str,
                                                      stoppable_postgres: StoppableServer,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    from cogs.memory.store.sqlite.store import SqliteStore

    db = tmp_path / "m.sqlite3"
    await (await SqliteStore.open(db)).close()
    await asyncio.to_thread(stoppable_postgres.stop)
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(db), "migrate", "--to", server_url, "--model", MODEL]), out, err)
    assert (code, out.getvalue()) == (1, "")
    [line] = err.getvalue().splitlines()
    assert line.startswith("error: PostgreSQL at postgres@") and "cannot be reached" in line
    no_tracebacks(caplog)


# -- the bot: capture goes on while the database is away ---------------------------------------------------------

FAST_RETRY = RetryPolicy(first_delay_s=0.05, max_delay_s=0.5)
# The store logs an outage (postgres/faults.py), once for every part of memory that meets it.
OUTAGE_BEGINS = ("WARNING", "PostgreSQL at postgres@/tmp/memory-test-pgdata-X/memory_test_N cannot be reached (WHY): "
                 "memory keeps what it is given and tries again until the server answers")
OUTAGE_ENDS = ("INFO", "PostgreSQL at postgres@/tmp/memory-test-pgdata-X/memory_test_N answers again")


async def until(condition: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 60.0) -> None:
    """Wait for ``condition`` (checked every 50 ms), failing with ``what`` after ``timeout_s``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail(f"not within {timeout_s:.0f} s: {what}")
        await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def capturing(url: str, spool_path: Path, embedder: EmbeddingService) -> AsyncIterator[IngestQueue]:
    """The bot's ingest over PostgreSQL with its spool, as Memory.open builds it (retries sped up)."""
    store = await PostgresStore.open(url)
    queue = IngestQueue(store, embedder, DatabaseIndexes(store, embedder.model_name, embedder.dimension), retry=FAST_RETRY,
                        spool=IngestSpool(spool_path))
    queue.start()
    try:
        yield queue
    finally:
        await queue.close()
        await store.close()


async def stored_ids(url: str) -> set[int]:
    conn = await asyncpg.connect(url)
    try:
        return {row[0] for row in await conn.fetch("SELECT message_id FROM messages")}
    finally:
        await conn.close()


async def spooled(path: Path) -> int:
    return len(await IngestSpool(path).read())


def outage_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """Memory's log lines about the outage: every WARNING or worse, and the INFO lines that say the server is back
    (the test's server folder, database number and the reason, shutting down or gone, left out)."""
    lines = [(record.levelname, record.getMessage()) for record in caplog.records if record.name.startswith("cogs.")
             and (record.levelno >= logging.WARNING or record.levelno == logging.INFO and "again" in record.getMessage())]
    return [(level, re.sub(r"reached \(.*\): ", "reached (WHY): ",
                           re.sub(r"memory_test_\d+", "memory_test_N", re.sub(r"pgdata-\w+", "pgdata-X", text))))
            for level, text in lines]


async def test_capture_goes_on_while_postgresql_is_away_and_catches_up(
        server_url: str, stoppable_postgres: StoppableServer, embedder: EmbeddingService, tmp_path: Path,
        make_record: RecordFactory, caplog: pytest.LogCaptureFixture) -> None:
    spool_path = tmp_path / "data" / SPOOL_NAME
    caplog.set_level(logging.INFO)
    async with capturing(server_url, spool_path, embedder) as queue:
        await queue.add(make_record(1, "before the outage"))
        await queue.flush(vectors=False)
        await asyncio.to_thread(stoppable_postgres.stop)
        for message_id in range(2, 7):
            await queue.add(make_record(message_id, f"said while the database was away, number {message_id}"))
        await until(lambda: _equals(spooled(spool_path), 5), "the five messages kept in the spool")
        await asyncio.to_thread(stoppable_postgres.start)
        await until(lambda: _equals(stored_ids(server_url), set(range(1, 7))), "every message stored")
        await until(lambda: _equals(spooled(spool_path), 0), "the spool emptied")
    assert outage_lines(caplog) == [OUTAGE_BEGINS, OUTAGE_ENDS]
    no_tracebacks(caplog)


async def test_what_the_spool_kept_is_stored_after_a_restart_during_the_outage(
        server_url: str, stoppable_postgres: StoppableServer, embedder: EmbeddingService, tmp_path: Path,
        make_record: RecordFactory) -> None:
    spool_path = tmp_path / "data" / SPOOL_NAME
    async with capturing(server_url, spool_path, embedder) as queue:
        await asyncio.to_thread(stoppable_postgres.stop)
        for message_id in range(1, 4):
            await queue.add(make_record(message_id, f"said while the database was away, number {message_id}"))
        await until(lambda: _equals(spooled(spool_path), 3), "the three messages kept in the spool")
    await asyncio.to_thread(stoppable_postgres.start)
    async with capturing(server_url, spool_path, embedder) as queue:
        await until(lambda: _equals(stored_ids(server_url), {1, 2, 3}), "what the spool kept, stored")
        await until(lambda: _equals(spooled(spool_path), 0), "the spool emptied")


async def _equals(value: Awaitable[Any], expected: Any) -> bool:
    return await value == expected


async def test_an_outage_is_one_warning_as_it_begins_and_one_info_as_it_ends_whatever_meets_it(
        server_url: str, stoppable_postgres: StoppableServer, core_profile: Any, tmp_path: Path,
        make_record: RecordFactory, caplog: pytest.LogCaptureFixture) -> None:
    """The writer, the spool, the vector filler and the names all meet the lost server: the log says so once."""
    data = tmp_path / "data"
    caplog.set_level(logging.DEBUG, logger="cogs")
    memory = await Memory.open(core_profile, data / "m.sqlite3", tmp_path / "idx", server_url)
    try:
        await memory.names.stop_refreshing()  # memory on a server refreshes the names each 30 s: here, at once
        memory.names.start_refreshing(interval_s=0.05)
        await memory.add(make_record(1, "before the outage"))
        await memory.flush(vectors=True)
        await asyncio.to_thread(stoppable_postgres.stop)
        memory.names.note_channel(1, 20, "general")
        for message_id in range(2, 5):
            await memory.add(make_record(message_id, f"said while the database was away, number {message_id}"))
        await until(lambda: _equals(spooled(data / SPOOL_NAME), 3), "the three messages kept in the spool")
        await until(lambda: _logged(caplog, "Could not read guild and channel names again"), "a refresh failed")
        await memory.ingest.settle()  # tried again at once, and failing again: still no new line
        await asyncio.to_thread(stoppable_postgres.start)
        await memory.ingest.settle()  # the held messages are tried now, not after the pause grown meanwhile
        await until(lambda: _equals(stored_ids(server_url), {1, 2, 3, 4}), "every message stored")
        await memory.flush(vectors=True)
        await until(lambda: _logged(caplog, "Guild and channel names read again"), "a refresh worked")
    finally:
        await memory.close()
    assert outage_lines(caplog) == [OUTAGE_BEGINS, OUTAGE_ENDS]
    no_tracebacks(caplog)


async def _logged(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(text in record.getMessage() for record in caplog.records)


async def test_dropped_connections_are_opened_again_and_nothing_is_lost(
        database_url: str, embedder: EmbeddingService, tmp_path: Path, make_record: RecordFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with capturing(database_url, tmp_path / SPOOL_NAME, embedder) as queue:
        await queue.add(make_record(1, "before the connections drop"))
        await queue.flush(vectors=False)
        conn = await asyncpg.connect(database_url)
        try:  # as a server restart or a network cut does to every session but this one
            await conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        finally:
            await conn.close()
        await queue.add(make_record(2, "after they dropped"))
        report = await queue.flush(vectors=False)
    assert report.complete and await stored_ids(database_url) == {1, 2}
    no_tracebacks(caplog)
