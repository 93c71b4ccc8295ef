"""The bot started while its PostgreSQL is away: it stays up, says so once, keeps what is said in the spool, and opens
memory (storing what the spool kept) once the server answers; what only a person can fix is one ERROR line, at once.
A real server (pgserver) is stopped and started."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import discord
import discord.ext.test as dpytest
import pytest
from tenacity import wait_fixed

from bot import MemoryBot
from cogs.memory.cog import replies
from cogs.memory.ingest.spool import SPOOL_NAME, IngestSpool
from cogs.memory.runtime.config import load_settings
from cogs.memory.runtime.profile import MemoryProfile
from tests.fixtures.discord import say
from tests.fixtures.postgres import StoppableServer, fresh_database
from tests.fixtures.waiting import eventually


@pytest.fixture
def guild(discord_bot: MemoryBot) -> discord.Guild:
    return dpytest.get_config().guilds[0]


def on_database(bot: MemoryBot, url: str, profile: MemoryProfile, monkeypatch: pytest.MonkeyPatch) -> None:
    """``bot`` as launched with DATABASE_URL=``url``, the test's profile, and quick tries while the server is away."""
    bot.config = load_settings({"DATABASE_URL": url}, None)
    bot.open_retry_wait = wait_fixed(0.05)
    monkeypatch.setattr(bot, "choose_profile", lambda: profile)


def opening(bot: MemoryBot) -> asyncio.Task[None]:
    """What ``setup_hook`` starts once the gateway is ready (dpytest's gateway never says so)."""
    bot._ready.set()
    return asyncio.create_task(bot._open_memory_when_connected())


async def stored_ids(url: str) -> set[int]:
    conn = await asyncpg.connect(url)
    try:
        return {row[0] for row in await conn.fetch("SELECT message_id FROM messages")}
    finally:
        await conn.close()


async def spooled(path: Path) -> int:
    spool = IngestSpool(path)
    try:
        return len(await spool.read())
    finally:
        await spool.close()


def lines(caplog: pytest.LogCaptureFixture, level: int, text: str = "") -> list[str]:
    """The bot's and memory's log lines at ``level`` (exactly) holding ``text``."""
    return [record.getMessage() for record in caplog.records if record.levelno == level
            and record.name.split(".")[0] in ("bot", "cogs") and text in record.getMessage()]


async def test_memory_opens_once_postgresql_answers_and_stores_what_was_said_while_it_was_away(
        discord_bot: MemoryBot, stoppable_postgres: StoppableServer, core_profile: MemoryProfile,
        guild: discord.Guild, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    url = await fresh_database(stoppable_postgres.url)
    await asyncio.to_thread(stoppable_postgres.stop)
    on_database(discord_bot, url, core_profile, monkeypatch)
    caplog.set_level(logging.DEBUG)
    task = opening(discord_bot)
    try:
        await eventually(lambda: discord_bot.memory_unreachable is not None, what="memory waits for its database")
        channel, member = guild.text_channels[0], guild.members[0]
        said = await say("the picnic moved to Saturday", member, channel)
        await eventually(lambda: spooled(discord_bot.db_path.parent / SPOOL_NAME), what="the message kept")
        await eventually(lambda: len(lines(caplog, logging.DEBUG, "Memory cannot open yet")) >= 2,
                         what="two more tries, logged at DEBUG")
        await asyncio.to_thread(stoppable_postgres.start)
        await asyncio.wait_for(discord_bot.memory_ready.wait(), timeout=120)  # the condition "memory ready"
        await task
        assert discord_bot.memory is not None and discord_bot.memory_error is None
        await discord_bot.memory.flush()
        assert await stored_ids(url) == {said.id}
        assert await spooled(discord_bot.db_path.parent / SPOOL_NAME) == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    [warning] = lines(caplog, logging.WARNING) + lines(caplog, logging.ERROR)
    assert warning.startswith("Memory cannot open yet: PostgreSQL at postgres@") and "cannot be reached" in warning
    assert "The bot keeps trying" in warning
    assert len(lines(caplog, logging.INFO, "The database answers again")) == 1
    assert not [record for record in caplog.records if record.exc_info]


async def test_commands_say_the_database_is_unreachable_while_memory_waits_for_it(
        discord_bot: MemoryBot, slash: object, guild: discord.Guild) -> None:
    discord_bot.memory_unreachable = "PostgreSQL at postgres@/run/postgresql/memory cannot be reached"
    http = await slash.run("memory stats", guild.members[0], guild.text_channels[0])  # type: ignore[attr-defined]
    assert [(s.content, s.ephemeral) for s in http.sent] == [(replies.MEMORY_UNREACHABLE, True)]
    assert replies.MEMORY_UNREACHABLE.startswith("Memory is not available yet: the database is unreachable.")


async def test_a_refused_login_is_one_error_line_and_no_retry(
        discord_bot: MemoryBot, stoppable_postgres: StoppableServer, core_profile: MemoryProfile,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    url = await fresh_database(stoppable_postgres.url)
    await asyncio.to_thread(stoppable_postgres.require_password)
    on_database(discord_bot, stoppable_postgres.login_url(url, "wrong"), core_profile, monkeypatch)
    caplog.set_level(logging.DEBUG)
    await asyncio.wait_for(opening(discord_bot), timeout=120)
    assert (discord_bot.memory, discord_bot.memory_ready.is_set()) == (None, True)
    [error] = lines(caplog, logging.ERROR) + lines(caplog, logging.WARNING)
    assert error.startswith("Memory cannot start: PostgreSQL at memory_bot@") and "refused the login" in error
    assert "fix the user or password in DATABASE_URL" in error and "wrong" not in error
    assert lines(caplog, logging.DEBUG, "Memory cannot open yet") == []  # not tried again
    assert not [record for record in caplog.records if record.exc_info]


async def test_a_database_that_does_not_exist_is_one_error_line_and_no_retry(
        discord_bot: MemoryBot, postgres_server_url: str, core_profile: MemoryProfile,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    missing = urlunsplit(urlsplit(postgres_server_url)._replace(path="/no_such_memory"))
    on_database(discord_bot, missing, core_profile, monkeypatch)
    caplog.set_level(logging.DEBUG)
    await asyncio.wait_for(opening(discord_bot), timeout=120)
    [error] = lines(caplog, logging.ERROR) + lines(caplog, logging.WARNING)
    assert error.startswith("Memory cannot start: PostgreSQL at ") and "has no such database" in error
    assert discord_bot.memory is None and discord_bot.memory_error is not None
    assert lines(caplog, logging.DEBUG, "Memory cannot open yet") == []


async def test_a_schema_newer_than_the_bot_is_one_error_line_and_no_retry(
        discord_bot: MemoryBot, database_url: str, core_profile: MemoryProfile,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION)")
        await conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 0)")
    finally:
        await conn.close()
    on_database(discord_bot, database_url, core_profile, monkeypatch)
    caplog.set_level(logging.DEBUG)
    await asyncio.wait_for(opening(discord_bot), timeout=120)
    [error] = lines(caplog, logging.ERROR) + lines(caplog, logging.WARNING)
    assert error == ("Memory cannot start: the PostgreSQL database was set up by a newer version of the bot (migration "
                     "9999_from_the_future); update the bot, or point DATABASE_URL to another database")
    assert lines(caplog, logging.DEBUG, "Memory cannot open yet") == []


async def test_a_question_while_the_database_is_away_is_kept_and_answered_that_memory_waits(
        discord_bot: MemoryBot, guild: discord.Guild) -> None:
    discord_bot.memory_unreachable = "PostgreSQL at postgres@/run/postgresql/memory cannot be reached"
    await discord_bot._start_spooling()  # as between two tries to open memory
    try:
        await say(f"{discord_bot.user.mention} when is the picnic?", guild.members[0], guild.text_channels[0])
        reply = dpytest.get_message()
    finally:
        await discord_bot._stop_spooling()
    assert reply.content == replies.MEMORY_UNREACHABLE
    assert await spooled(discord_bot.db_path.parent / SPOOL_NAME) == 2  # the question, and the bot's own reply


async def test_a_profile_setting_holding_a_url_reaches_neither_the_log_nor_discord_with_its_password(
        discord_bot: MemoryBot, caplog: pytest.LogCaptureFixture) -> None:
    discord_bot.config = load_settings({"MEMORY_PROFILE": "https://admin:hunter2@profiles.example.org/big.toml"}, None)
    caplog.set_level(logging.DEBUG)
    await asyncio.wait_for(opening(discord_bot), timeout=120)
    [error] = lines(caplog, logging.ERROR) + lines(caplog, logging.WARNING)
    assert error.startswith("Memory cannot start: ") and "admin:***@profiles.example.org" in error
    assert "hunter2" not in caplog.text and "hunter2" not in (discord_bot.memory_error or "hunter2")
    assert not [record for record in caplog.records if record.exc_info]
