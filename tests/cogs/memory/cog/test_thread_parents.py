"""Which channels' public threads a member may read through the parent, from real discord.py guild objects."""

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.cog.permissions import readable_channel_ids, readable_thread_parent_ids
from tests.fixtures.discord import hidden_channel, make_forum_channel, make_thread


@pytest.fixture
def guild(discord_bot):
    return dpytest.get_config().guilds[0]


def test_readable_text_channels_are_thread_parents(guild, member):
    assert readable_thread_parent_ids(member, readable_channel_ids(member)) == {c.id for c in guild.text_channels}


def test_a_readable_forum_is_a_thread_parent(guild, member):
    forum = make_forum_channel(guild)
    assert forum.id in readable_thread_parent_ids(member, readable_channel_ids(member))


def test_a_hidden_channel_is_not_a_thread_parent(guild, member):
    assert hidden_channel(guild).id not in readable_thread_parent_ids(member, readable_channel_ids(member))


def test_a_channel_seen_without_its_history_is_not_a_thread_parent(guild, member):
    allow, deny = discord.PermissionOverwrite(read_message_history=False).pair()
    channel = backend.make_text_channel("announcements", guild, permission_overwrites=[
        {"id": str(guild.default_role.id), "type": 0, "allow": str(allow.value), "deny": str(deny.value)}])
    assert channel.id not in readable_thread_parent_ids(member, readable_channel_ids(member))


def test_threads_and_categories_are_not_thread_parents(guild, member):
    thread = make_thread(guild, guild.text_channels[0])
    category = backend.make_category_channel("general", guild)
    assert readable_thread_parent_ids(member, readable_channel_ids(member)).isdisjoint({thread.id, category.id})


def test_channels_of_another_guild_are_never_thread_parents(guild, member):
    other = dpytest.get_config().guilds[1]
    assert readable_thread_parent_ids(member, readable_channel_ids(member)).isdisjoint(c.id for c in other.channels)
