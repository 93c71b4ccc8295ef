"""What reading history again never stores: /memory backfill (and catch-up, through the same page reconciler) adds
only what live capture would store now, and never brings back what was forgotten, even once its tombstones are
gone."""

import time
from datetime import timedelta

import discord
import pytest

from cogs.memory.records import SearchFilters
from tests.fixtures.discord import bot_replies, say
from tests.fixtures.history import said_while_away


async def stored(bot, guild):
    await bot.memory.flush(vectors=True)
    hits = await bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 20)
    return sorted(hit.content for hit in hits)


async def backfill(slash, admin, channel):
    http = await slash.run("memory backfill", admin, channel, channel=channel)
    bot_replies()
    return http


def a_moment_later():
    """A time surely after what happened just now: message times count whole milliseconds."""
    return discord.utils.utcnow() + timedelta(seconds=1)


async def a_month_later(bot, profile):
    """A restart 30 days on: the forget's tombstones have expired, and nothing of it is left in this process."""
    from cogs.memory.memory import Memory

    await bot.memory.close()
    memory = await Memory.open(profile, bot.db_path, bot.index_dir)
    await memory.store.prune_tombstones(time.time() + 1)
    await bot.attach_memory(memory)


# -- what live capture would not store ------------------------------------------------------------------------------


async def test_a_channel_whose_capture_is_off_is_not_read(memory_bot, slash, guild, channel, member, admin,
                                                          history_api):
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=False)
    said_while_away("picnic secret", member, channel)
    asked = len(history_api.requests)
    http = await backfill(slash, admin, channel)
    assert (http.last.content, history_api.requests[asked:], await stored(memory_bot, guild)) == (
        f"Capture is off in {channel.mention}, so its history is not read either: turn it on with /memory settings "
        "first.", [], [])


async def test_what_was_said_while_capture_was_off_is_not_read_in(memory_bot, slash, guild, channel, member, admin):
    said_while_away("picnic before", member, channel)
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=False)
    await say("picnic secret", member, channel)
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=True)
    said_while_away("picnic after", member, channel, at=a_moment_later())
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == ["picnic after", "picnic before"]


async def test_what_a_member_said_while_opted_out_is_not_read_in(memory_bot, slash, guild, channel, member, admin):
    await slash.run("memory optout", member, channel)
    await say("picnic secret", member, channel)
    await slash.run("memory optin", member, channel)
    said_while_away("picnic after", member, channel, at=a_moment_later())
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == ["picnic after"]


async def test_a_message_older_than_the_guild_keeps_is_not_read_in(memory_bot, slash, guild, channel, member, admin):
    await slash.run("memory settings", admin, channel, retention_days=30)
    said_while_away("picnic long ago", member, channel, at=discord.utils.utcnow() - timedelta(days=40))
    said_while_away("picnic lately", member, channel, at=discord.utils.utcnow() - timedelta(days=20))
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == ["picnic lately"]


async def test_a_member_who_left_is_not_read_in_where_leaving_forgets(memory_bot, slash, guild, channel, member,
                                                                     admin, members):
    await slash.run("memory settings", admin, channel, forget_on_leave=True)
    gone = members[1]
    said_while_away("picnic from one who left", gone, channel)
    said_while_away("picnic from one who stayed", member, channel)
    guild._remove_member(gone)  # the leave happened while the bot was away: no event, and a new session's guild
    guild._member_count = len(guild.members)  # data counts the members there are now
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == ["picnic from one who stayed"]


# -- what was forgotten ---------------------------------------------------------------------------------------------

FORGETS = {
    "a member": lambda memory, message: memory.forget_author(message.guild.id, message.author.id),
    "a member everywhere": lambda memory, message: memory.forget_author(None, message.author.id),
    "a member in a channel": lambda memory, message: memory.forget_author(
        message.guild.id, message.author.id, channel_id=message.channel.id),
    "a message": lambda memory, message: memory.forget_message(message.guild.id, message.id),
    "a channel": lambda memory, message: memory.forget_channel(message.guild.id, message.channel.id),
    "a guild": lambda memory, message: memory.forget_guild(message.guild.id),
}


@pytest.mark.parametrize("forget", FORGETS.values(), ids=FORGETS.keys())
async def test_what_was_forgotten_does_not_come_back_once_its_tombstones_expire(
        memory_bot, slash, guild, channel, member, admin, tiny_reranker_profile, forget):
    forgotten = await say("picnic secret", member, channel)
    await memory_bot.memory.flush(vectors=True)
    await forget(memory_bot.memory, forgotten)
    await a_month_later(memory_bot, tiny_reranker_profile)
    said_while_away("picnic after", member, channel, at=a_moment_later())
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == ["picnic after"]


async def test_forgetting_a_message_by_its_link_keeps_it_out_of_history(memory_bot, slash, guild, channel, member,
                                                                        admin, tiny_reranker_profile):
    forgotten = await say("picnic secret", member, channel)
    await memory_bot.memory.flush(vectors=True)
    http, task = slash.start("memory forget", member, channel, what="a message", message_link=forgotten.jump_url)
    prompt = await http.wait_for(lambda sent: sent.kind == "response")
    await slash.press(http, prompt, "Forget", member, channel)
    await task
    await a_month_later(memory_bot, tiny_reranker_profile)
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == []


async def test_an_opt_out_another_process_wrote_is_obeyed_by_backfill(memory_bot, slash, guild, channel, member,
                                                                      admin):
    """The cog's caches say opted in; the database (where the core's admission rule reads) says out."""
    assert not await memory_bot.memory.is_opted_out(guild.id, member.id)
    await memory_bot.memory.store.set_opt_out(guild.id, member.id, True)
    said_while_away("picnic from the opted-out member", member, channel)
    await backfill(slash, admin, channel)
    assert await stored(memory_bot, guild) == []
