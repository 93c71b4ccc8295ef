"""Fixtures the cog tests share: the test guild, and the catch-up cog without pauses (catch-up tests)."""

import discord.ext.test as dpytest
import pytest


@pytest.fixture
def guild(memory_bot):
    return dpytest.get_config().guilds[0]


@pytest.fixture
def catch_up(memory_bot):
    """The catch-up cog, reading without pauses and without retries."""
    cog = memory_bot.get_cog("MemoryCatchUp")
    cog.page_pause_s, cog.retry_delays_s = 0, ()
    return cog
