"""Every /memory option checked in the bot: crafted interactions that Discord's client would never send get a short
private answer saying what to change, and nothing runs."""

import discord
import pytest
from discord.webhook.async_ import async_context

from cogs.memory.cog import replies
from cogs.memory.records import SearchFilters
from tests.fixtures.discord import say
from tests.fixtures.interactions import FakeDiscordHTTP, command_payload, find_command


@pytest.fixture
async def picnic(memory_bot, channel, other):
    """Something a search would find, so a refused search is told apart from one that found nothing."""
    await say("the picnic moved to Saturday", other, channel)
    await memory_bot.memory.flush(vectors=True)


def searches_run(bot):
    return len(bot.get_cog("MemoryCommands").latencies.search_ms)


def answers(http):
    return [(sent.content, sent.ephemeral) for sent in http.sent]


async def stored(bot, guild):
    await bot.memory.flush(vectors=True)
    return sorted(hit.content for hit in await bot.memory.search("picnic", SearchFilters(guild_id=guild.id), 20))


async def run_payload(bot, payload, channel):
    """A hand-edited interaction payload through the real tree, as a crafted request would arrive."""
    http = FakeDiscordHTTP(bot.user.id, channel.id)
    async_context.set(http)
    await bot.tree._call(discord.Interaction(data=payload, state=bot._connection))
    return http


# -- search -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [-5, 0, 51, 10000])
async def test_a_limit_outside_1_to_50_is_refused_before_searching(memory_bot, slash, channel, member, picnic, limit):
    http = await slash.run("memory search", member, channel, query="picnic", limit=limit)
    assert (answers(http), searches_run(memory_bot)) == (
        [(f"`limit` must be between 1 and 50; you gave {limit}.", True)], 0)


async def test_a_limit_that_is_not_a_whole_number_is_refused(memory_bot, slash, channel, member, picnic):
    http = await slash.run("memory search", member, channel, query="picnic", limit="5")
    assert (answers(http), searches_run(memory_bot)) == ([("`limit` must be a whole number; you gave `5`.", True)], 0)


async def test_dates_the_wrong_way_round_say_so(memory_bot, slash, channel, member, picnic):
    http = await slash.run("memory search", member, channel, query="picnic", after="2024-05-31", before="2024-05-01")
    assert (answers(http), searches_run(memory_bot)) == (
        [("`after` must be earlier than `before`; you gave after 2024-05-31 and before 2024-05-01.", True)], 0)


@pytest.mark.parametrize("date", ["0001-01-01", "2999-01-01", "9999-12-31T23:00:00-05:00"])
async def test_a_date_outside_discords_lifetime_is_refused(memory_bot, slash, channel, member, picnic, date):
    http = await slash.run("memory search", member, channel, query="picnic", before=date)
    assert (answers(http), searches_run(memory_bot)) == (
        [(f"`{date}` is outside Discord's lifetime. Use a date from 2015-01-01 to today.", True)], 0)


async def test_a_blank_query_is_refused(memory_bot, slash, channel, member, picnic):
    http = await slash.run("memory search", member, channel, query="   ")
    assert (answers(http), searches_run(memory_bot)) == ([("`query` can't be blank; write something in it.", True)], 0)


async def test_an_overlong_query_is_refused(memory_bot, slash, channel, member, picnic):
    http = await slash.run("memory search", member, channel, query="picnic " * 43)
    assert (answers(http), searches_run(memory_bot)) == (
        [("`query` must be 1 to 300 characters long; you gave 301.", True)], 0)


async def test_a_missing_query_is_refused(memory_bot, slash, channel, member, picnic):
    http = await slash.run("memory search", member, channel, limit=5)
    assert (answers(http), searches_run(memory_bot)) == ([("`query` is required; fill it in.", True)], 0)


async def test_an_author_discord_did_not_resolve_is_refused(memory_bot, slash, channel, member, other, picnic):
    command = find_command(memory_bot, "memory search")
    payload = command_payload(memory_bot, command, member, channel, {"query": "picnic", "author": other})
    del payload["data"]["resolved"]
    http = await run_payload(memory_bot, payload, channel)
    assert (answers(http), searches_run(memory_bot)) == ([(replies.BAD_OPTION.format(value=other.id), True)], 0)


# -- forget -------------------------------------------------------------------------------------------------------


async def test_an_unknown_what_is_refused(memory_bot, slash, channel, member):
    http = await slash.run("memory forget", member, channel, what="everything")
    assert answers(http) == [("`what` must be one of `my messages`, `a channel`, `a member`, `a message`; you gave "
                              "`everything`.", True)]


async def test_forgetting_a_message_without_its_link_says_where_to_put_it(memory_bot, slash, channel, member):
    http = await slash.run("memory forget", member, channel, what="a message")
    assert answers(http) == [("Paste the message's link in the `message_link` option (right-click the message, Copy "
                              "Message Link).", True)]


async def test_an_option_meant_for_another_what_is_refused(memory_bot, slash, guild, channel, member, other):
    await say("my picnic idea", member, channel)
    http = await slash.run("memory forget", member, channel, what="my messages", member=other)
    assert (answers(http), await stored(memory_bot, guild)) == (
        [("`member` doesn't go with what:my messages; leave it out.", True)], ["my picnic idea"])


async def test_a_link_whose_id_is_no_snowflake_is_refused(memory_bot, slash, guild, channel, member):
    link = f"https://discord.com/channels/{guild.id}/{channel.id}/99999999999999999999"
    http = await slash.run("memory forget", member, channel, what="a message", message_link=link)
    assert answers(http) == [(replies.FORGET_BAD_LINK, True)]


async def test_an_overlong_message_link_is_refused(memory_bot, slash, guild, channel, member):
    link = f"https://discord.com/channels/{guild.id}/{channel.id}/1?" + "x" * 200
    http = await slash.run("memory forget", member, channel, what="a message", message_link=link)
    assert answers(http) == [(f"`message_link` must be 1 to 200 characters long; you gave {len(link)}.", True)]


# -- admin commands -------------------------------------------------------------------------------------------------


async def test_a_backfill_limit_out_of_range_is_refused(memory_bot, slash, guild, channel, member, admin):
    await slash.run("memory settings", admin, channel, capture_channel=channel, capture=False)
    await say("old picnic plans", member, channel)
    http = await slash.run("memory backfill", admin, channel, channel=channel, limit=0)
    assert (answers(http), await stored(memory_bot, guild)) == (
        [("`limit` must be between 1 and 100000; you gave 0.", True)], [])


async def test_permission_is_checked_before_options(memory_bot, slash, channel, member):
    http = await slash.run("memory backfill", member, channel, channel=channel, limit=0)
    assert answers(http) == [("You need the Manage Server permission to use this command.", True)]


async def test_a_negative_retention_is_refused_and_nothing_changes(memory_bot, slash, guild, channel, admin):
    http = await slash.run("memory settings", admin, channel, retention_days=-1)
    settings = await memory_bot.memory.settings(guild.id)
    assert (answers(http), settings.retention_days) == (
        [("`retention_days` must be between 0 and 3650; you gave -1.", True)], None)


async def test_a_yes_no_option_given_text_is_refused(memory_bot, slash, guild, channel, admin):
    http = await slash.run("memory settings", admin, channel, auto_recall="yes")
    assert answers(http) == [("`auto_recall` must be true or false; you gave `yes`.", True)]


async def test_an_overlong_profile_name_is_refused(memory_bot, slash, channel, member):
    memory_bot.bot_admin_ids = frozenset({member.id})
    http = await slash.run("memory profile set", member, channel, name="x" * 101)
    assert answers(http) == [("`name` must be 1 to 100 characters long; you gave 101.", True)]
