"""Capture through the gateway (dpytest) when a delete, an edit or a leave overtakes the message it is about: while the
models load, or while the first message of a guild since start waits for the guild's settings."""

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.memory import Memory
from tests.fixtures.discord import attach_memory_now, edit, remembered


@pytest.fixture
def guild(discord_bot):
    return dpytest.get_config().guilds[0]


def raw_delete(message_id: int, channel: discord.TextChannel) -> None:
    """MESSAGE_DELETE as the gateway sends it, whether or not the bot has the message cached."""
    backend.get_state().parse_message_delete(
        {"id": str(message_id), "channel_id": str(channel.id), "guild_id": str(channel.guild.id)})


async def test_a_message_deleted_while_memory_loads_is_not_stored(discord_bot, tiny_reranker_profile, guild, channel,
                                                                  member):
    message = backend.make_message("the picnic moved to Saturday", member, channel)
    backend.delete_message(message)
    memory = await Memory.open(tiny_reranker_profile, discord_bot.db_path, discord_bot.index_dir)
    await discord_bot.attach_memory(memory)  # the listeners waiting for it run now, in the order they came
    await dpytest.run_all_events()
    assert await remembered(discord_bot, guild) == []


async def test_a_message_kept_while_memory_loads_is_stored(discord_bot, tiny_reranker_profile, guild, channel,
                                                           member):
    backend.make_message("the picnic moved to Saturday", member, channel)
    await attach_memory_now(discord_bot, tiny_reranker_profile)
    assert await remembered(discord_bot, guild) == ["the picnic moved to Saturday"]


async def test_the_first_message_in_a_guild_deleted_at_once_is_not_stored(memory_bot, guild, channel, member):
    message = backend.make_message("the picnic moved to Saturday", member, channel)
    backend.delete_message(message)  # an automod bot, before the guild's settings were first read
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


def evict_from_cache(bot) -> None:
    """The bot's message cache forgets everything (it holds 1,000 messages; a busy server turns it over fast)."""
    bot._connection._messages.clear()


async def test_a_raw_delete_of_an_uncached_message_drops_it(memory_bot, guild, channel, member):
    message = backend.make_message("the picnic moved to Saturday", member, channel)
    evict_from_cache(memory_bot)
    raw_delete(message.id, channel)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_a_bulk_delete_of_messages_not_stored_yet_drops_them(memory_bot, guild, channel, member):
    first = backend.make_message("the picnic moved to Saturday", member, channel)
    second = backend.make_message("bring picnic blankets on Saturday", member, channel)
    backend.get_state().parse_message_delete_bulk(
        {"ids": [str(first.id), str(second.id)], "channel_id": str(channel.id), "guild_id": str(guild.id)})
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_an_edit_before_the_message_is_stored_keeps_the_edited_text(memory_bot, guild, channel, member):
    message = backend.make_message("the picnic moved to Saturday at 555-0100", member, channel)
    # Uncached, so the edit does not rewrite the message object on_message holds: only the edit event says it.
    evict_from_cache(memory_bot)
    await edit(message, "the picnic moved to Saturday")
    assert await remembered(memory_bot, guild) == ["the picnic moved to Saturday"]


async def test_a_member_who_leaves_right_after_speaking_is_forgotten_when_the_guild_asks(memory_bot, guild, channel,
                                                                                        member):
    settings = await memory_bot.memory.settings(guild.id)
    await memory_bot.memory.save_settings(guild.id, settings.with_changes(forget_on_leave=True))
    backend.make_message("the picnic moved to Saturday", member, channel)
    backend.delete_member(member)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []
