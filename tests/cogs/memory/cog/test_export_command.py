"""/memory export through the real command tree on both stores: a zipped JSON + HTML attachment sent to the member
alone, holding their own messages and none of anyone else's; one per member per server per day (a guild setting),
counted only once sent; nothing to send for a member memory holds nothing of."""

from __future__ import annotations

import io
import json
import zipfile

import discord.ext.test as dpytest
import pytest

from cogs.memory.cog import replies
from tests.cogs.memory.cog.test_mine import any_bot  # noqa: F401 - the bot on either store
from tests.fixtures.discord import hidden_channel, reply_to, say


@pytest.fixture
def guild(any_bot):  # noqa: F811
    return dpytest.get_config().guilds[0]


def exported(sent):
    """(the JSON document, the HTML page) of the one zip attached to ``sent``."""
    ((name, data),) = sent.files.items()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return name, json.loads(archive.read("memory.json")), archive.read("memory.html").decode()


async def test_the_export_arrives_privately_as_a_zip_of_my_messages(any_bot, slash, guild, channel, member, other):
    await say("my picnic plan", member, channel)
    theirs = await say("their secret reply", other, channel)
    await reply_to(theirs, "my answer to them", member)
    await any_bot.memory.flush()
    http = await slash.run("memory export", member, channel)
    name, document, page = exported(http.last)
    assert (http.sent[0].kind, http.sent[0].ephemeral, http.last.ephemeral) == ("defer", True, True)
    assert name == f"memory-export-{guild.id}-{member.id}-part1.zip"
    assert http.last.content.startswith("Here is everything I hold of you in this server (2 messages, 0 notes")
    assert [(m["content"], m["channel"], m["reply_to_id"]) for m in document["messages"]] == [
        ("my picnic plan", channel.name, None), ("my answer to them", channel.name, str(theirs.id))]
    assert "their secret reply" not in json.dumps(document) + page


async def test_a_channel_i_cannot_read_now_is_counted_not_named_nor_carried(any_bot, slash, guild, channel, member):
    staff = hidden_channel(guild)
    await say("staff-only words", member, staff)
    await say("general words", member, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory export", member, channel)
    _, document, page = exported(http.last)
    whole = json.dumps(document) + page
    assert ("staff-only words" in whole, staff.name in whole, str(staff.id) in whole) == (False, False, False)
    assert document["held"]["messages_in_channels_not_shown"] == 1
    assert replies.EXPORT_HIDDEN.format(messages=1) in http.last.content


async def test_a_second_export_the_same_day_is_refused_with_when(any_bot, slash, channel, member):
    await say("my picnic plan", member, channel)
    await any_bot.memory.flush()
    await slash.run("memory export", member, channel)
    http = await slash.run("memory export", member, channel)
    assert (http.last.content.startswith("You can have one export every 24 hours; your next one is ready <t:"),
            http.last.files, http.last.ephemeral) == (True, {}, True)


async def test_the_interval_is_a_guild_setting(any_bot, slash, guild, channel, member):
    settings = await any_bot.memory.settings(guild.id)
    await any_bot.memory.save_settings(guild.id, settings.with_changes(export_interval_hours=0))
    await say("my picnic plan", member, channel)
    await any_bot.memory.flush()
    await slash.run("memory export", member, channel)
    http = await slash.run("memory export", member, channel)
    assert len(http.last.files) == 1


async def test_nothing_held_is_said_and_not_counted(any_bot, slash, channel, member):
    http = await slash.run("memory export", member, channel)
    await say("my picnic plan", member, channel)
    await any_bot.memory.flush()
    again = await slash.run("memory export", member, channel)
    assert (http.last.content, http.last.files, len(again.last.files)) == (replies.EXPORT_NOTHING, {}, 1)


async def test_an_opted_out_member_gets_the_opt_out_itself(any_bot, slash, channel, member):
    await say("my picnic plan", member, channel)
    await any_bot.memory.flush()
    await slash.run("memory optout", member, channel)
    http = await slash.run("memory export", member, channel)
    _, document, _ = exported(http.last)
    assert (document["settings"]["opted_out"], document["messages"]) == (True, [])


async def test_another_guilds_messages_are_never_exported(any_bot, slash, channel, member):
    other_guild = dpytest.get_config().guilds[1]
    await say("said in the other server", next(m for m in other_guild.members if not m.bot),
              other_guild.text_channels[0])
    await say("said here", member, channel)
    await any_bot.memory.flush()
    http = await slash.run("memory export", member, channel)
    _, document, page = exported(http.last)
    assert "other server" not in json.dumps(document) + page
