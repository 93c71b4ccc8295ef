"""The dashboard served by the bot: on with MEMORY_DASHBOARD_PORT, off without, stopped with the cog."""

from __future__ import annotations

import socket

import aiohttp
import pytest

from bot import MemoryBot
from cogs.memory.runtime.config import load_settings


@pytest.fixture
def guild(memory_bot: MemoryBot):
    import discord.ext.test as dpytest

    return dpytest.get_config().guilds[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def reload_cog(bot: MemoryBot) -> None:
    await bot.reload_extension("cogs.memory.cog")


def set_port(monkeypatch: pytest.MonkeyPatch, bot: MemoryBot, port: int | None) -> None:
    """The bot's settings with MEMORY_DASHBOARD_PORT (or without it), as launcher.py reads them from .env."""
    environ = {} if port is None else {"MEMORY_DASHBOARD_PORT": str(port)}
    monkeypatch.setattr(bot, "config", load_settings(environ, None))


async def test_the_bot_serves_the_dashboard_when_a_port_is_set(discord_bot: MemoryBot,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    set_port(monkeypatch, discord_bot, port)
    await reload_cog(discord_bot)
    cog = discord_bot.get_cog("MemoryDashboard")
    assert cog is not None and cog.dashboard.port == port
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(f"http://127.0.0.1:{port}/api/overview") as response:
            assert response.status == 401
        token = cog.dashboard.state.tokens.issue()
        async with http.get(f"http://127.0.0.1:{port}/login", params={"token": token}) as response:
            # No memory attached: the pages say it is still opening.
            assert response.status == 503 and "still opening" in await response.text()
    await discord_bot.unload_extension("cogs.memory.cog")
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # stopped with the cog
    await discord_bot.load_extension("cogs.memory.cog")  # the fixture unloads it on the way out


async def test_without_a_port_there_is_no_dashboard(discord_bot: MemoryBot, monkeypatch: pytest.MonkeyPatch) -> None:
    set_port(monkeypatch, discord_bot, None)
    await reload_cog(discord_bot)
    assert discord_bot.get_cog("MemoryDashboard") is None


async def test_a_taken_port_leaves_the_bot_running(discord_bot: MemoryBot, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        set_port(monkeypatch, discord_bot, taken.getsockname()[1])
        await reload_cog(discord_bot)
    assert discord_bot.get_cog("MemoryCommands") is not None
    assert "could not listen" in caplog.text


async def test_a_slash_search_is_plotted_on_the_dashboard(memory_bot: MemoryBot, slash, channel, member, other,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures.discord import say

    set_port(monkeypatch, memory_bot, free_port())
    await reload_cog(memory_bot)
    recorder = memory_bot.get_cog("MemoryDashboard").dashboard.recorder
    await say("the picnic moved to Saturday", other, channel)
    await memory_bot.memory.flush()
    await slash.run("memory search", member, channel, query="when is the picnic")
    [point] = [p for p in recorder.series("hour").points if p.recalls]
    assert point.recalls == 1 and point.first_stage_p50_ms > 0 and point.rerank_p50_ms > 0
    assert point.scored_per_recall >= 1
