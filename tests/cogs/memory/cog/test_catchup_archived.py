"""Catch-up reads the threads Discord archived while the bot was away: they are no longer among the guild's active
threads, so only the archived-thread listings find them. The outage is simulated at Discord's edge."""

import asyncio
from datetime import timedelta

import discord
import pytest

from cogs.memory.records import SearchFilters
from tests.fixtures.core import fetchall
from tests.fixtures.discord import make_forum_channel, make_thread, say
from tests.fixtures.history import archived_while_away, reconnect, said_while_away
from tests.fixtures.waiting import eventually


@pytest.fixture
async def before_outage(memory_bot, channel, member):
    """A message the bot heard live, then the bot goes away."""
    message = await say("picnic plans: the park", member, channel)
    await memory_bot.memory.flush(vectors=True)
    return message


async def remembered(bot, guild):
    await bot.memory.flush(vectors=True)
    hits = await bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 20)
    return sorted(hit.content for hit in hits)


def history_read(history_api, channel_id, since=0):
    return bool(history_api.asked_for(channel_id, since=since))


async def a_moment_later(moment):
    """Returns once the clock is past ``moment`` by more than a snowflake's resolution (a millisecond)."""
    await eventually(lambda: discord.utils.utcnow() > moment + timedelta(milliseconds=2), what="the clock moves on")


# -- what is read ---------------------------------------------------------------------------------------------------


async def test_a_thread_archived_while_away_is_read(memory_bot, guild, channel, member, catch_up, before_outage):
    thread = make_thread(guild, channel)
    await say("picnic thread: who brings food", member, thread)
    said_while_away("picnic thread: I bring cake", member, thread)
    archived_while_away(thread)
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == [
        "picnic plans: the park", "picnic thread: I bring cake", "picnic thread: who brings food"]


async def test_a_forum_post_archived_while_away_is_read(memory_bot, guild, member, catch_up, before_outage):
    forum = make_forum_channel(guild)
    post = make_thread(guild, forum)
    said_while_away("picnic post: the lake is nicer", member, post)
    archived_while_away(post)
    await reconnect(memory_bot)
    assert "picnic post: the lake is nicer" in await remembered(memory_bot, guild)


async def test_a_private_thread_archived_while_away_is_read_and_kept_private(memory_bot, guild, channel, member,
                                                                              catch_up, before_outage):
    thread = make_thread(guild, channel, private=True, members=[member, guild.me], owner=member)
    missed = said_while_away("picnic secret: surprise cake", member, thread)
    archived_while_away(thread)
    await reconnect(memory_bot)
    await memory_bot.memory.flush()
    rows = await fetchall(memory_bot.memory.store, "SELECT private_thread FROM messages WHERE message_id = ?",
                          (missed.id,))
    assert rows == [(1,)]


async def test_a_catch_up_cut_short_before_the_archived_threads_reads_them_next_time(
        memory_bot, guild, channel, member, catch_up, before_outage, history_api):
    # The channel's own catch-up stores what was said while away, later than the thread's archiving: the next
    # catch-up must still list threads from where the bot was before the outage, not from that message.
    thread = make_thread(guild, channel)
    said_while_away("picnic thread: I bring cake", member, thread)
    await a_moment_later(before_outage.created_at)
    archived_at = discord.utils.utcnow()
    archived_while_away(thread, at=archived_at)
    await a_moment_later(archived_at)
    said_while_away("picnic moved to Sunday", member, channel)
    held = history_api.hold(thread.id)
    memory_bot.dispatch("connect")
    memory_bot.dispatch("ready")
    await asyncio.wait_for(held.wait(), 30)  # fails, rather than hangs, if the thread is not read
    await reconnect(memory_bot)  # stops the first catch-up while it reads the thread
    assert await remembered(memory_bot, guild) == [
        "picnic moved to Sunday", "picnic plans: the park", "picnic thread: I bring cake"]


async def test_archived_threads_discord_failed_to_list_are_listed_again(memory_bot, guild, channel, member, catch_up,
                                                                        before_outage, history_api):
    thread = make_thread(guild, channel)
    said_while_away("picnic thread: I bring cake", member, thread)
    archived_while_away(thread)
    history_api.fail_listing(channel.id)
    catch_up.retry_delays_s = (0,)
    await reconnect(memory_bot)
    assert "picnic thread: I bring cake" in await remembered(memory_bot, guild)


# -- what is not read -----------------------------------------------------------------------------------------------


async def test_a_thread_archived_before_the_bot_went_away_is_not_read(memory_bot, guild, channel, member, catch_up,
                                                                     before_outage, history_api):
    thread = make_thread(guild, channel)
    an_hour_ago = discord.utils.utcnow() - timedelta(hours=1)
    said_while_away("picnic thread: from before the bot came", member, thread, at=an_hour_ago)
    archived_while_away(thread, at=an_hour_ago + timedelta(minutes=1))  # before what the bot heard last
    await reconnect(memory_bot)
    assert not history_read(history_api, thread.id)


async def test_a_thread_read_by_one_catch_up_is_not_read_by_the_next(memory_bot, guild, channel, member, catch_up,
                                                                    before_outage, history_api):
    thread = make_thread(guild, channel)
    said_while_away("picnic thread: I bring cake", member, thread)
    archived_while_away(thread)
    await reconnect(memory_bot)
    asked = len(history_api.requests)
    await reconnect(memory_bot)
    assert (history_read(history_api, thread.id), history_read(history_api, thread.id, since=asked)) == (True, False)


async def test_a_forgotten_threads_messages_do_not_come_back(memory_bot, guild, channel, member, catch_up,
                                                             before_outage):
    thread = make_thread(guild, channel)
    await say("picnic thread: who brings food", member, thread)
    said_while_away("picnic thread: I bring cake", member, thread)
    await memory_bot.memory.flush()
    await memory_bot.memory.forget_channel(guild.id, thread.id)  # as /memory forget a channel does
    archived_while_away(thread)
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: the park"]


async def test_the_threads_of_a_channel_whose_capture_is_off_are_not_read(memory_bot, slash, guild, channel, member,
                                                                          admin, catch_up, before_outage,
                                                                          history_api):
    thread = make_thread(guild, channel)
    said_while_away("picnic thread: I bring cake", member, thread)
    archived_while_away(thread)
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=False)
    await reconnect(memory_bot)
    assert (channel.id not in {parent for parent, _ in history_api.listings},
            history_read(history_api, thread.id)) == (True, False)

