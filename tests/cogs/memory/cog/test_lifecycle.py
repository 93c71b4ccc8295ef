"""The bot's life around its memory: answering while models load, and shutting down without losing anything."""

import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.cog import replies
from cogs.memory.memory import Memory
from cogs.memory.records import SearchFilters
from tests.fixtures.discord import attach_memory_now


@pytest.fixture
def guild(discord_bot):
    return dpytest.get_config().guilds[0]


async def test_commands_answer_while_memory_loads(discord_bot, slash, channel, member):
    http = await slash.run("memory stats", member, channel)
    assert [(s.kind, s.content, s.ephemeral) for s in http.sent] == [("response", replies.MEMORY_LOADING, True)]


async def test_a_memory_that_failed_to_open_says_so(discord_bot, slash, channel, member):
    discord_bot.memory_error = "MemoryOpenError: no model"
    http = await slash.run("memory search", member, channel, query="picnic")
    assert http.last.content == "Memory could not be opened; the bot's owner has been told in the logs."


async def test_messages_said_while_loading_are_stored_once_memory_is_ready(discord_bot, guild, channel, member,
                                                                          tiny_reranker_profile):
    backend.make_message("the picnic moved to Saturday", member, channel)
    await attach_memory_now(discord_bot, tiny_reranker_profile)
    await discord_bot.memory.flush(vectors=True)
    hits = await discord_bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 5)
    assert [hit.content for hit in hits] == ["the picnic moved to Saturday"]


@pytest.fixture
def closable(memory_bot):
    memory_bot.ws = None  # dpytest's fake socket cannot close; a bot whose gateway already dropped closes the same way
    return memory_bot


async def test_closing_the_bot_keeps_what_was_queued(closable, guild, channel, member, tiny_reranker_profile):
    memory_bot = closable
    backend.make_message("the picnic moved to Saturday", member, channel)
    await dpytest.run_all_events()
    await memory_bot.close()  # no flush first: close must flush the queue and save the indexes
    reopened = await Memory.open(tiny_reranker_profile, memory_bot.db_path, memory_bot.index_dir)
    hits = await reopened.search("picnic", SearchFilters(guild_id=guild.id), 5)
    await reopened.close()
    assert [hit.content for hit in hits] == ["the picnic moved to Saturday"]


async def test_closing_the_bot_releases_memory(closable):
    await closable.close()
    assert (closable.memory, closable.memory_ready.is_set()) == (None, False)
