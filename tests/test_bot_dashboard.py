"""The dashboard the bot serves (bot.py wires it, beside the memory cog): on with MEMORY_DASHBOARD_PORT, off without,
stopped with the bot; the cog's recalls plotted on it, its catch-up shown on the Overview."""

from __future__ import annotations

import socket

import aiohttp
import discord.ext.test as dpytest
import pytest

from bot import MemoryBot
from cogs.memory.dashboard.source import CatchUpView
from cogs.memory.runtime.config import load_settings


@pytest.fixture
def guild(memory_bot: MemoryBot):
    return dpytest.get_config().guilds[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def set_port(monkeypatch: pytest.MonkeyPatch, bot: MemoryBot, port: int | None) -> None:
    """The bot's settings with MEMORY_DASHBOARD_PORT (or without it), as launcher.py reads them from .env."""
    environ = {} if port is None else {"MEMORY_DASHBOARD_PORT": str(port)}
    monkeypatch.setattr(bot, "config", load_settings(environ, None))


async def serve(bot: MemoryBot, monkeypatch: pytest.MonkeyPatch, port: int | None) -> None:
    """Start the bot's dashboard as ``setup_hook`` does, then load the memory cog again so that it records its
    recalls in the dashboard's recorder, as it does when the bot starts."""
    set_port(monkeypatch, bot, port)
    await bot.start_dashboard()
    await bot.reload_extension("cogs.memory.cog")


async def test_the_bot_serves_the_dashboard_when_a_port_is_set(discord_bot: MemoryBot,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    await serve(discord_bot, monkeypatch, port)
    assert discord_bot.dashboard is not None and discord_bot.dashboard.port == port
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(f"http://127.0.0.1:{port}/api/overview") as response:
            assert response.status == 401
        token = discord_bot.dashboard.state.tokens.issue()
        async with http.get(f"http://127.0.0.1:{port}/login", params={"token": token}) as response:
            # No memory attached: the pages say it is still opening.
            assert response.status == 503 and "still opening" in await response.text()
    discord_bot.ws = None  # dpytest's fake socket cannot close; a bot whose gateway already dropped closes the same way
    await discord_bot.close()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # stopped with the bot
    assert discord_bot.dashboard is None


async def test_reloading_the_memory_cog_leaves_the_dashboard_serving(discord_bot: MemoryBot,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    await serve(discord_bot, monkeypatch, port)
    await discord_bot.reload_extension("cogs.memory.cog")
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) == 0


async def test_without_a_port_there_is_no_dashboard(discord_bot: MemoryBot, monkeypatch: pytest.MonkeyPatch) -> None:
    await serve(discord_bot, monkeypatch, None)
    assert (discord_bot.dashboard, discord_bot.metrics) == (None, None)


async def test_a_taken_port_leaves_the_bot_running(discord_bot: MemoryBot, monkeypatch: pytest.MonkeyPatch,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        await serve(discord_bot, monkeypatch, taken.getsockname()[1])
    assert discord_bot.get_cog("MemoryCommands") is not None and discord_bot.dashboard is None
    assert "could not listen" in caplog.text


async def test_a_slash_search_is_plotted_on_the_dashboard(memory_bot: MemoryBot, slash, channel, member, other,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fixtures.discord import say

    await serve(memory_bot, monkeypatch, free_port())
    await say("the picnic moved to Saturday", other, channel)
    await memory_bot.memory.flush()
    await slash.run("memory search", member, channel, query="when is the picnic")
    [point] = [p for p in memory_bot.dashboard.recorder.series("hour").points if p.recalls]
    assert point.recalls == 1 and point.first_stage_p50_ms > 0 and point.rerank_p50_ms > 0
    assert point.scored_per_recall >= 1


async def test_the_overview_shows_the_memory_cogs_catch_up(memory_bot: MemoryBot, guild, channel, other,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from cogs.memory.cog.catchup import CatchUpStatus  # as the cog loaded now
    from tests.fixtures.discord import say

    await serve(memory_bot, monkeypatch, free_port())
    await say("the picnic moved to Saturday", other, channel)
    await memory_bot.memory.flush()
    memory_bot.get_cog("MemoryCatchUp").status[guild.id] = CatchUpStatus(channels=3, done=2, failed=1)
    overviews = await memory_bot.dashboard.state.source.guild_overviews()
    assert [(o.guild_id, o.catch_up) for o in overviews] == [(guild.id, CatchUpView(3, 2, 1, None))]
