"""Capture through the gateway (dpytest): what the cog stores, updates and forgets."""

import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.records import SearchFilters
from tests.fixtures.core import fetchall
from tests.fixtures.discord import edit, remembered, reply_to, say


async def test_a_message_is_remembered(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    assert await remembered(memory_bot, guild) == ["the picnic moved to Saturday"]


async def test_the_author_and_channel_are_kept(memory_bot, guild, channel, member):
    message = await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    (hit,) = await memory_bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 10)
    assert (hit.message_id, hit.channel_id, hit.author_id, hit.author_name) == (
        message.id, channel.id, member.id, member.display_name)


async def test_an_edit_replaces_the_remembered_text(memory_bot, guild, channel, member):
    message = await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    await edit(message, "the barbecue moved to Sunday")
    assert await remembered(memory_bot, guild, "barbecue Sunday") == ["the barbecue moved to Sunday"]


async def test_an_edited_message_is_not_found_by_its_old_words(memory_bot, guild, channel, member):
    message = await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    await edit(message, "the barbecue moved to Sunday")
    assert "the picnic moved to Saturday" not in await remembered(memory_bot, guild)


async def test_a_deleted_message_is_forgotten(memory_bot, guild, channel, member):
    message = await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    backend.delete_message(message)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_a_bulk_delete_forgets_every_message(memory_bot, guild, channel, member):
    first = await say("the picnic moved to Saturday", member, channel)
    second = await say("bring picnic blankets on Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    backend.get_state().parse_message_delete_bulk(
        {"ids": [str(first.id), str(second.id)], "channel_id": str(channel.id), "guild_id": str(guild.id)})
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_a_deleted_channel_is_forgotten(memory_bot, guild, member):
    channel = backend.make_text_channel("events", guild)
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    backend.delete_channel(channel)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_leaving_a_guild_forgets_it(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    memory_bot.dispatch("guild_remove", guild)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_a_bot_message_is_remembered_and_marked(memory_bot, guild, channel):
    message = await channel.send("reminder: the picnic moved to Saturday")
    await dpytest.run_all_events()
    await memory_bot.memory.flush(vectors=True)
    rows = await fetchall(
        memory_bot.memory.store, "SELECT author_is_bot FROM messages WHERE message_id = ?", (message.id,))
    assert rows == [(1,)]


async def test_an_opted_out_member_is_not_remembered(memory_bot, guild, channel, member):
    await memory_bot.memory.set_opt_out(guild.id, member.id, True)
    await say("the picnic moved to Saturday", member, channel)
    assert await remembered(memory_bot, guild) == []


async def test_a_channel_with_capture_off_is_not_remembered(memory_bot, guild, channel, member):
    memory = memory_bot.memory
    settings = await memory.settings(guild.id)
    await memory.save_settings(guild.id, settings.with_changes(capture_disabled_channel_ids=frozenset({channel.id})))
    await say("the picnic moved to Saturday", member, channel)
    assert await remembered(memory_bot, guild) == []


async def test_a_member_who_leaves_is_forgotten_when_the_guild_asks(memory_bot, guild, channel, member):
    memory = memory_bot.memory
    settings = await memory.settings(guild.id)
    await memory.save_settings(guild.id, settings.with_changes(forget_on_leave=True))
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    backend.delete_member(member)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == []


async def test_a_member_who_leaves_is_kept_by_default(memory_bot, guild, channel, member):
    await say("the picnic moved to Saturday", member, channel)
    await memory_bot.memory.flush(vectors=True)
    backend.delete_member(member)
    await dpytest.run_all_events()
    assert await remembered(memory_bot, guild) == ["the picnic moved to Saturday"]


async def dm_from(member):
    return await member.create_dm()


async def dm_memory(bot, dm, query="picnic Saturday"):
    await bot.memory.flush(vectors=True)
    return [hit.content for hit in await bot.memory.search(query, SearchFilters(guild_id=dm.id), 10)]


async def test_a_dm_is_not_remembered_by_default(memory_bot, member):
    dm = await dm_from(member)
    await say("the picnic moved to Saturday", member, dm)
    assert await dm_memory(memory_bot, dm) == []


async def test_a_dm_is_remembered_in_its_own_space_when_enabled(memory_bot, guild, member):
    memory_bot.store_dms = True
    dm = await dm_from(member)
    await say("the picnic moved to Saturday", member, dm)
    assert (await dm_memory(memory_bot, dm), await remembered(memory_bot, guild)) == (
        ["the picnic moved to Saturday"], [])


async def test_a_deleted_dm_is_forgotten(memory_bot, member):
    memory_bot.store_dms = True
    dm = await dm_from(member)
    message = await say("the picnic moved to Saturday", member, dm)
    await memory_bot.memory.flush(vectors=True)
    backend.delete_message(message)
    await dpytest.run_all_events()
    assert await dm_memory(memory_bot, dm) == []


async def test_a_reply_keeps_what_it_answers_and_a_plain_message_does_not(memory_bot, guild, channel, member):
    question = await say("anyone know a good plumber?", member, channel)
    answer = await reply_to(question, "Rivera, they fixed my sink", member)
    other = await say("the match was great", member, channel)
    await memory_bot.memory.flush(vectors=True)
    rows = await fetchall(memory_bot.memory.store, "SELECT message_id, reply_to_id FROM messages ORDER BY message_id")
    assert rows == sorted([(question.id, None), (answer.id, question.id), (other.id, None)])


async def test_a_forward_is_no_reply_to_what_it_forwards(memory_bot, guild, channel, member):
    original = await say("anyone know a good plumber?", member, channel)
    data = backend.facts.make_message_dict(channel, member, content="look at this", type=0)
    data["message_reference"] = {"type": 1, "message_id": str(original.id), "channel_id": str(channel.id),
                                 "guild_id": str(guild.id)}
    backend.get_state().parse_message_create(data)
    await dpytest.run_all_events()
    await memory_bot.memory.flush(vectors=True)
    rows = await fetchall(memory_bot.memory.store, "SELECT reply_to_id FROM messages WHERE message_id = ?",
                          (int(data["id"]),))
    assert rows == [(None,)]


def another_bot(guild):
    """A member that is another bot (a level-up bot, say)."""
    state = backend.get_state()
    user = state.store_user(backend.facts.make_user_dict("levelbot", "0001", None, bot=True))
    return backend.make_member(user, guild)


async def test_another_bots_message_is_not_remembered_by_default(memory_bot, guild, channel):
    await say("levelbot: the picnic planner reached level 5 on Saturday", another_bot(guild), channel)
    assert await remembered(memory_bot, guild) == []


async def test_another_bots_message_is_remembered_when_the_guild_asks(memory_bot, guild, channel):
    memory = memory_bot.memory
    await memory.save_settings(guild.id, (await memory.settings(guild.id)).with_changes(store_bot_messages=True))
    await say("levelbot: the picnic planner reached level 5 on Saturday", another_bot(guild), channel)
    assert await remembered(memory_bot, guild) == ["levelbot: the picnic planner reached level 5 on Saturday"]


async def test_a_bots_message_queued_before_the_setting_is_refused_by_the_core(memory_bot, guild, channel):
    from cogs.memory.cog.capture import record_from_message

    message = backend.make_message("levelbot: the picnic moved to Saturday", another_bot(guild), channel)
    await memory_bot.memory.add(record_from_message(message))  # what catch-up and backfill hand to ingest
    assert await remembered(memory_bot, guild) == []
