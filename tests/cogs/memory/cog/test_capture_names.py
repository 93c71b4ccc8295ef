"""Names through the gateway (dpytest): a captured message records its channel's and guild's names (a thread's with
its parent), and a rename on Discord changes them in memory."""

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend
from discord.ext.test.backend import facts

from tests.fixtures.core import fetchall
from tests.fixtures.discord import make_thread, say
from tests.fixtures.history import reconnect, said_while_away


async def stored_names(bot) -> list[tuple]:
    await bot.memory.flush()
    return sorted(await fetchall(bot.memory.store, "SELECT kind, id, name, parent_id FROM place_names"))


async def rename_channel(channel: discord.abc.GuildChannel, name: str) -> None:
    data = facts.dict_from_channel(channel)
    data["name"] = name
    backend.get_state().parse_channel_update(data)
    await dpytest.run_all_events()


async def test_a_captured_message_records_its_channels_and_guilds_names(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    assert await stored_names(memory_bot) == [("channel", channel.id, channel.name, None),
                                              ("guild", guild.id, guild.name, None)]


async def test_a_threads_message_records_the_thread_with_its_parent(memory_bot, guild, channel, member):
    thread = make_thread(guild, channel, members=[member])
    await say("the picnic moved to Saturday", member, thread)
    assert await stored_names(memory_bot) == sorted([("channel", channel.id, channel.name, None),
                                                     ("channel", thread.id, thread.name, channel.id),
                                                     ("guild", guild.id, guild.name, None)])


async def test_renaming_a_channel_renames_it_in_memory(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    await rename_channel(channel, "picnic-planning")
    assert ("channel", channel.id, "picnic-planning", None) in await stored_names(memory_bot)
    assert memory_bot.memory.names.channel_names(guild.id) == {channel.id: "picnic-planning"}


async def test_renaming_a_guild_renames_it_in_memory(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    # GUILD_UPDATE as Discord sends it (dpytest's own guild dict predates discord.py 2)
    backend.get_state().parse_guild_update({"id": str(guild.id), "name": "Picnic Society",
                                            "owner_id": str(guild.owner_id),
                                            "roles": [facts.dict_from_role(role) for role in guild.roles]})
    await dpytest.run_all_events()
    assert ("guild", guild.id, "Picnic Society", None) in await stored_names(memory_bot)


async def test_renaming_a_thread_renames_it_in_memory(memory_bot, guild, channel, member):
    thread = make_thread(guild, channel, members=[member])
    await say("the picnic moved to Saturday", member, thread)
    backend.get_state().parse_thread_update({
        "id": str(thread.id), "guild_id": str(guild.id), "parent_id": str(channel.id),
        "owner_id": str(thread.owner_id), "name": "saturday-logistics", "type": thread.type.value,
        "thread_metadata": {"archived": False, "auto_archive_duration": 1440, "locked": False,
                            "archive_timestamp": discord.utils.utcnow().isoformat()},
    })
    await dpytest.run_all_events()
    assert ("channel", thread.id, "saturday-logistics", channel.id) in await stored_names(memory_bot)


async def test_a_channel_never_captured_is_not_named_by_its_rename(memory_bot, guild, channel, member):
    quiet = backend.make_text_channel("quiet", guild)
    await say("the picnic moved to Saturday", member, channel)
    await rename_channel(quiet, "still-quiet")
    assert [row for row in await stored_names(memory_bot) if row[1] == quiet.id] == []


async def test_a_deleted_channels_name_is_forgotten(memory_bot, guild, member):
    events = backend.make_text_channel("events", guild)
    await say("the picnic moved to Saturday", member, events)
    backend.delete_channel(events)
    await dpytest.run_all_events()
    assert [row for row in await stored_names(memory_bot) if row[1] == events.id] == []


async def test_a_message_the_catch_up_stores_records_its_channels_name(memory_bot, guild, channel, member):
    cog = memory_bot.get_cog("MemoryCatchUp")
    cog.page_pause_s, cog.retry_delays_s = 0, ()
    await say("picnic plans: the park", member, channel)
    await memory_bot.memory.flush(vectors=True)
    await memory_bot.memory.names.forget(guild.id)  # as if the names were never seen live
    said_while_away("picnic moved to Sunday", member, channel)
    await reconnect(memory_bot)
    assert await stored_names(memory_bot) == [("channel", channel.id, channel.name, None),
                                              ("guild", guild.id, guild.name, None)]


async def test_leaving_a_guild_forgets_its_names(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush()
    memory_bot.dispatch("guild_remove", guild)
    await dpytest.run_all_events()
    assert (await stored_names(memory_bot), memory_bot.memory.names.guild_name(guild.id)) == ([], None)
