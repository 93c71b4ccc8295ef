"""Catch-up after the bot was away: what was said, edited and deleted meanwhile reaches memory once a new gateway
session begins. The outage is simulated at Discord's edge: history changes, and no gateway event arrives."""

import asyncio
import importlib
import re

import discord.ext.test as dpytest
import pytest

from cogs.memory.records import SearchFilters
from tests.fixtures.core import message_writes_failing
from tests.fixtures.discord import edit, make_thread, say
from tests.fixtures.history import deleted_while_away, edited_while_away, reconnect, said_while_away

EXTENSION = "cogs.memory.cog"


async def remembered(bot, guild):
    await bot.memory.flush(vectors=True)
    hits = await bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 20)
    return sorted(hit.content for hit in hits)


@pytest.fixture
async def before_outage(memory_bot, channel, member):
    """Two messages the bot heard live, then the bot goes away."""
    first = await say("picnic plans: the park", member, channel)
    second = await say("picnic plans: bring blankets", member, channel)
    await memory_bot.memory.flush(vectors=True)
    return first, second


# -- what was missed ------------------------------------------------------------------------------------------------


async def test_messages_said_while_away_are_remembered(memory_bot, guild, channel, member, catch_up, before_outage):
    said_while_away("picnic moved to Sunday", member, channel)
    said_while_away("picnic starts at noon", member, channel)
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == [
        "picnic moved to Sunday", "picnic plans: bring blankets", "picnic plans: the park", "picnic starts at noon"]


async def test_a_message_deleted_while_away_is_forgotten(memory_bot, guild, channel, member, catch_up,
                                                         before_outage):
    deleted_while_away(before_outage[0])
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: bring blankets"]


async def test_the_newest_message_deleted_while_away_is_forgotten(memory_bot, guild, channel, member, catch_up,
                                                                  before_outage):
    deleted_while_away(before_outage[1])
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: the park"]


async def test_an_edit_made_while_away_is_applied(memory_bot, guild, channel, member, catch_up, before_outage):
    edited_while_away(before_outage[0], "picnic plans: the beach")
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: bring blankets", "picnic plans: the beach"]


async def test_a_thread_is_caught_up(memory_bot, guild, channel, member, catch_up, before_outage):
    thread = make_thread(guild, channel)
    await say("picnic thread: who brings food", member, thread)
    said_while_away("picnic thread: I bring cake", member, thread)
    await reconnect(memory_bot)
    assert "picnic thread: I bring cake" in await remembered(memory_bot, guild)


async def test_a_second_outage_after_a_reconnect_is_caught_up_too(memory_bot, guild, channel, member, catch_up,
                                                                  before_outage):
    said_while_away("picnic moved to Sunday", member, channel)
    await reconnect(memory_bot)
    await say("picnic: see you there", member, channel)
    said_while_away("picnic is cancelled", member, channel)
    await reconnect(memory_bot)
    assert "picnic is cancelled" in await remembered(memory_bot, guild)


async def test_a_resumed_session_reads_no_history(memory_bot, guild, channel, member, catch_up, before_outage,
                                                  history_api):
    asked = len(history_api.requests)
    memory_bot.dispatch("resumed")  # Discord replays every missed event itself
    await dpytest.run_all_events()
    await catch_up.wait()
    assert len(history_api.requests) == asked


async def test_a_first_message_still_queued_at_a_new_session_is_read_on_from(memory_bot, guild, channel, member,
                                                                              catch_up):
    with message_writes_failing(memory_bot.db_path):  # the guild's first message waits in the queue meanwhile
        await say("picnic plans: the park", member, channel)
        said_while_away("picnic moved to Sunday", member, channel)
        await reconnect(memory_bot)
    await say("picnic: see you there", member, channel)
    await memory_bot.memory.flush()
    await reconnect(memory_bot)  # anchored at the newest stored message, this would skip what was said before it
    assert await remembered(memory_bot, guild) == [
        "picnic moved to Sunday", "picnic plans: the park", "picnic: see you there"]


async def test_a_catch_up_stopped_by_a_new_session_still_reads_every_channel(memory_bot, guild, channel, member,
                                                                            catch_up, before_outage, history_api):
    other = guild.text_channels[1]
    said_while_away("picnic: said in the other channel while away", member, other)
    held = history_api.hold(channel.id)  # the first session's catch-up never gets past the first channel
    memory_bot.dispatch("connect")
    memory_bot.dispatch("ready")
    await asyncio.wait_for(held.wait(), 30)  # fails, rather than hangs, if no catch-up reads
    await say("picnic: heard live in the other channel", member, other)
    await memory_bot.memory.flush()
    await reconnect(memory_bot)  # stops the first catch-up; the other channel's place was saved before any reading
    assert "picnic: said in the other channel while away" in await remembered(memory_bot, guild)


async def test_capture_turned_off_and_on_during_a_catch_up_keeps_the_channels_place(memory_bot, slash, guild, channel,
                                                                                   member, admin, catch_up,
                                                                                   before_outage, history_api):
    other = guild.text_channels[1]
    said_while_away("picnic: said in the other channel while away", member, other)
    held = history_api.hold(channel.id)  # the other channel is still to be read
    memory_bot.dispatch("connect")
    memory_bot.dispatch("ready")
    await asyncio.wait_for(held.wait(), 30)  # fails, rather than hangs, if no catch-up reads
    await slash.run("memory settings", admin, channel, capture_channel=other, capture=False)
    await say("picnic secret: said while capture was off", member, other)
    await slash.run("memory settings", admin, channel, capture_channel=other, capture=True)
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == [
        "picnic plans: bring blankets", "picnic plans: the park", "picnic: said in the other channel while away"]


# -- what is left as it is ------------------------------------------------------------------------------------------


async def test_a_newer_edit_heard_live_is_kept(memory_bot, guild, channel, member, catch_up, before_outage):
    edited_while_away(before_outage[0], "picnic plans: the beach")
    await edit(before_outage[0], "picnic plans: the lake")  # a later edit, heard live after the history was read
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: bring blankets", "picnic plans: the lake"]


async def test_a_channel_whose_capture_is_off_is_not_read(memory_bot, slash, guild, channel, member, admin, catch_up,
                                                          before_outage, history_api):
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=False)
    said_while_away("picnic moved to Sunday", member, channel)
    asked = len(history_api.requests)
    await reconnect(memory_bot)
    assert channel.id not in {request.channel_id for request in history_api.requests[asked:]}


async def test_what_was_said_while_capture_was_off_stays_unstored(memory_bot, slash, guild, channel, member, admin,
                                                                   catch_up, before_outage):
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=False)
    await say("picnic secret: said while capture was off", member, channel)
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=True)
    said_while_away("picnic moved to Sunday", member, channel)
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == [
        "picnic moved to Sunday", "picnic plans: bring blankets", "picnic plans: the park"]


async def test_an_opted_out_members_messages_are_not_caught_up(memory_bot, slash, guild, channel, member, catch_up,
                                                               before_outage, members):
    other = members[1]
    await slash.run("memory optout", other, channel)
    said_while_away("picnic: my private plans", other, channel)
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: bring blankets", "picnic plans: the park"]


async def test_a_forgotten_members_messages_do_not_come_back_after_a_restart(memory_bot, guild, channel, member,
                                                                              catch_up, members,
                                                                              tiny_reranker_profile):
    from cogs.memory.memory import Memory

    other = members[1]
    await say("picnic plans: the park", member, channel)
    await say("picnic: my last words", other, channel)
    await memory_bot.memory.flush(vectors=True)
    await memory_bot.memory.forget_author(guild.id, other.id)  # as /memory forget a member does
    await memory_bot.memory.close()  # a restart: nothing of the forget is left in this process
    await memory_bot.attach_memory(await Memory.open(tiny_reranker_profile, memory_bot.db_path,
                                                     memory_bot.index_dir))
    await reconnect(memory_bot)
    assert await remembered(memory_bot, guild) == ["picnic plans: the park"]


# -- saved progress -------------------------------------------------------------------------------------------------


async def test_an_interrupted_catch_up_goes_on_from_its_saved_place(memory_bot, guild, channel, member, catch_up,
                                                                    before_outage, history_api, monkeypatch):
    monkeypatch.setattr(importlib.import_module("cogs.memory.cog.catchup"), "PAGE_SIZE", 2)
    missed = [said_while_away(f"picnic note {n}", member, channel) for n in range(4)]
    held = history_api.hold(channel.id, nth=3)  # pages: the 2 heard live, notes 0-1, then the bot stops
    memory_bot.dispatch("connect")
    memory_bot.dispatch("ready")
    await asyncio.wait_for(held.wait(), 30)  # fails, rather than hangs, if no catch-up reads
    await memory_bot.reload_extension(EXTENSION)  # a restart: the catch-up in flight is cancelled
    memory_bot.get_cog("MemoryCatchUp").page_pause_s = 0
    resumed = len(history_api.requests)
    await reconnect(memory_bot)
    assert (history_api.asked_for(channel.id, since=resumed)[0].after, await remembered(memory_bot, guild)) == (
        missed[1].id, ["picnic note 0", "picnic note 1", "picnic note 2", "picnic note 3",
                       "picnic plans: bring blankets", "picnic plans: the park"])


async def test_a_channel_discord_failed_to_serve_is_read_again(memory_bot, guild, channel, member, catch_up,
                                                               before_outage, history_api):
    said_while_away("picnic moved to Sunday", member, channel)
    history_api.fail(channel.id)
    catch_up.retry_delays_s = (0,)
    await reconnect(memory_bot)
    assert "picnic moved to Sunday" in await remembered(memory_bot, guild)


async def test_no_channel_is_finished_while_a_message_read_could_not_be_stored(memory_bot, slash, guild, channel,
                                                                               member, catch_up, before_outage):
    # A flush reports every message still unstored, so the channel read after the failing one stays unfinished too.
    said_while_away("picnic moved to Sunday", member, channel)
    with message_writes_failing(memory_bot.db_path):
        await reconnect(memory_bot)
        http = await slash.run("memory stats", member, channel)
    fields = {field.name: field.value for field in http.last.embeds[0].fields}
    assert re.fullmatch(r"finished <t:\d+:R>: 2 channels, 0 messages read, 0 new, 0 edited, 0 deleted\. "
                        r"2 channels could not be read; they go on from their saved place later\.", fields["Catch-up"])


# -- /memory stats ----------------------------------------------------------------------------------------------------


async def test_stats_show_the_finished_catch_up(memory_bot, slash, guild, channel, member, catch_up, before_outage):
    said_while_away("picnic moved to Sunday", member, channel)
    deleted_while_away(before_outage[0])
    await reconnect(memory_bot)
    http = await slash.run("memory stats", member, channel)
    fields = {field.name: field.value for field in http.last.embeds[0].fields}
    assert re.fullmatch(r"finished <t:\d+:R>: 2 channels, 2 messages read, 1 new, 0 edited, 1 deleted\.",
                        fields["Catch-up"])


async def test_stats_show_a_catch_up_in_progress(memory_bot, slash, guild, channel, member, catch_up, before_outage,
                                                 history_api):
    held = history_api.hold(channel.id)
    memory_bot.dispatch("connect")
    memory_bot.dispatch("ready")
    await asyncio.wait_for(held.wait(), 30)  # fails, rather than hangs, if no catch-up reads
    http = await slash.run("memory stats", member, channel)
    fields = {field.name: field.value for field in http.last.embeds[0].fields}
    assert fields["Catch-up"] == "reading channel 1 of 2: 0 messages read, 0 new, 0 edited, 0 deleted so far."


async def test_stats_before_any_catch_up_say_so(memory_bot, slash, channel, member):
    http = await slash.run("memory stats", member, channel)
    fields = {field.name: field.value for field in http.last.embeds[0].fields}
    assert fields["Catch-up"] == "not run yet: it starts once the bot has connected"
