"""What a member may read and change, computed from real discord.py guild, role and channel objects."""

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.cog.permissions import can_read, readable_channel_ids
from tests.fixtures.discord import make_thread


@pytest.fixture
def guild(discord_bot):
    return dpytest.get_config().guilds[0]


def deny_everyone(guild, **overwrite):
    return {str(guild.default_role.id): discord.PermissionOverwrite(**overwrite)}


def overwrites_payload(overwrites):
    data = []
    for target_id, overwrite in overwrites.items():
        allow, deny = overwrite.pair()
        data.append({"id": target_id, "type": 0, "allow": str(allow.value), "deny": str(deny.value)})
    return data


def test_a_member_reads_the_open_channels(guild, member):
    assert readable_channel_ids(member) == {c.id for c in guild.text_channels}


def test_a_channel_overwrite_hides_the_channel(guild, member):
    hidden = backend.make_text_channel("staff", guild, permission_overwrites=overwrites_payload(
        {str(guild.default_role.id): discord.PermissionOverwrite(view_channel=False)}))
    assert hidden.id not in readable_channel_ids(member)


def test_seeing_a_channel_without_its_history_is_not_reading_it(guild, member):
    channel = backend.make_text_channel("announcements", guild, permission_overwrites=overwrites_payload(
        {str(guild.default_role.id): discord.PermissionOverwrite(read_message_history=False)}))
    assert not can_read(channel, member)


def test_a_channel_synced_to_a_hidden_category_is_hidden(guild, member):
    overwrites = overwrites_payload({str(guild.default_role.id): discord.PermissionOverwrite(view_channel=False)})
    category = backend.make_category_channel("private", guild, permission_overwrites=overwrites)
    channel = backend.make_text_channel("in-private", guild, permission_overwrites=overwrites, parent_id=category.id)
    assert channel.id not in readable_channel_ids(member)


def test_a_role_overwrite_opens_a_hidden_channel_to_its_members(guild, member):
    role = backend.make_role("staff", guild)
    backend.update_member(member, roles=[role])
    channel = backend.make_text_channel("staff", guild, permission_overwrites=overwrites_payload({
        str(guild.default_role.id): discord.PermissionOverwrite(view_channel=False),
        str(role.id): discord.PermissionOverwrite(view_channel=True),
    }))
    assert channel.id in readable_channel_ids(guild.get_member(member.id))


def test_a_thread_in_a_hidden_channel_is_hidden(guild, member):
    parent = backend.make_text_channel("staff", guild, permission_overwrites=overwrites_payload(
        {str(guild.default_role.id): discord.PermissionOverwrite(view_channel=False)}))
    thread = make_thread(guild, parent)
    assert thread.id not in readable_channel_ids(member)


def test_a_public_thread_of_a_readable_channel_is_readable(guild, member):
    thread = make_thread(guild, guild.text_channels[0])
    assert thread.id in readable_channel_ids(member)


def test_a_private_thread_is_only_for_its_members(guild, member):
    thread = make_thread(guild, guild.text_channels[0], private=True)
    assert thread.id not in readable_channel_ids(member)


def test_a_private_thread_member_reads_it(guild, member):
    thread = make_thread(guild, guild.text_channels[0], private=True, members=[member])
    assert thread.id in readable_channel_ids(member)


def test_channels_of_another_guild_are_never_readable(discord_bot, member):
    other = dpytest.get_config().guilds[1]
    assert readable_channel_ids(member).isdisjoint(c.id for c in other.channels)


async def test_a_non_admin_cannot_change_settings(slash, guild, member):
    http = await slash.run("memory settings", member, guild.text_channels[0], auto_recall=True)
    assert [(s.content, s.ephemeral) for s in http.sent] == [
        ("You need the Manage Server permission to use this command.", True)
    ]


async def test_a_non_admin_cannot_backfill(slash, guild, member):
    http = await slash.run("memory backfill", member, guild.text_channels[0], channel=guild.text_channels[0])
    assert http.last.content == "You need the Manage Server permission to use this command."


async def test_a_server_admin_who_is_not_a_bot_admin_cannot_switch_profiles(slash, guild, member):
    role = backend.make_role("admin", guild, permissions=discord.Permissions(manage_guild=True).value)
    admin = backend.update_member(member, roles=[role])
    http = await slash.run("memory profile set", admin, guild.text_channels[0], name="cpu-small")
    assert [(s.content, s.ephemeral) for s in http.sent] == [
        ("Only the bot's owner or a bot admin (BOT_ADMIN_IDS) can change the profile, because it applies to every "
         "server.", True)
    ]
