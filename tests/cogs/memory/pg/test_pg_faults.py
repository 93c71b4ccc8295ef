"""A PostgreSQL that goes away (stopped, refusing the login, unreachable) is one line from the CLI, a summary of
what was stored, exit 1 and no traceback; a real server (pgserver) is stopped and started mid-run."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.memory import Memory
from cogs.memory.records import MessageRecord
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
    from cogs.memory.store import MemoryStore

    db = tmp_path / "m.sqlite3"
    await (await MemoryStore.open(db)).close()
    await asyncio.to_thread(stoppable_postgres.stop)
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(db), "migrate", "--to", server_url, "--model", MODEL]), out, err)
    assert (code, out.getvalue()) == (1, "")
    [line] = err.getvalue().splitlines()
    assert line.startswith("error: PostgreSQL at postgres@") and "cannot be reached" in line
    no_tracebacks(caplog)
