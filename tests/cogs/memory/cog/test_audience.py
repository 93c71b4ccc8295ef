"""The audience rule on real discord.py guilds, roles, channels and threads: what a reply posted in a channel may quote."""

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.cog.audience import AudienceCache
from tests.fixtures.discord import give_role, make_role, make_thread

HIDE = discord.PermissionOverwrite(view_channel=False)
SHOW = discord.PermissionOverwrite(view_channel=True)


@pytest.fixture
def guild(discord_bot):
    return dpytest.get_config().guilds[0]


@pytest.fixture
def staff(guild, staff_role):
    """#staff: hidden from @everyone, shown to the staff role."""
    return text_channel(guild, "staff", {guild.default_role: HIDE, staff_role: SHOW})


def text_channel(guild, name, overwrites=None, category=None):
    payload = []
    for target, overwrite in (overwrites or {}).items():
        allow, deny = overwrite.pair()
        kind = 0 if isinstance(target, discord.Role) else 1
        payload.append({"id": str(target.id), "type": kind, "allow": str(allow.value), "deny": str(deny.value)})
    if category is not None:
        return backend.make_text_channel(name, guild, permission_overwrites=payload, parent_id=category.id)
    return backend.make_text_channel(name, guild, permission_overwrites=payload)


async def quotable(channel):
    """The channel and thread ids a reply posted in ``channel`` may quote."""
    return (await AudienceCache().audience(channel)).channel_ids


async def test_open_channels_may_quote_each_other(guild, general):
    assert await quotable(general) == {c.id for c in guild.text_channels}


async def test_a_role_only_channel_is_not_quoted_where_everyone_reads(general, staff):
    assert staff.id not in await quotable(general)


async def test_a_role_only_channel_quotes_itself_and_what_its_role_reads(general, staff):
    assert {general.id, staff.id} <= await quotable(staff)


async def test_a_channel_synced_to_a_hidden_category_is_not_quoted_outside_it(guild, general, staff_role):
    private = {guild.default_role: HIDE, staff_role: SHOW}
    category = backend.make_category_channel("private", guild)
    synced = text_channel(guild, "plans", private, category=category)
    assert synced.id not in await quotable(general)


async def test_channels_synced_to_one_category_quote_each_other(guild, staff_role):
    private = {guild.default_role: HIDE, staff_role: SHOW}
    category = backend.make_category_channel("private", guild)
    plans = text_channel(guild, "plans", private, category=category)
    notes = text_channel(guild, "notes", private, category=category)
    assert notes.id in await quotable(plans)


async def test_a_channel_opened_to_one_member_is_not_quoted_where_everyone_reads(guild, general, member):
    desk = text_channel(guild, "desk", {guild.default_role: HIDE, member: SHOW})
    assert desk.id not in await quotable(general)


async def test_a_guest_let_into_a_channel_keeps_role_only_channels_out_of_it(guild, staff, staff_role, members):
    give_role(members[0], staff_role)
    guest = members[1]
    meeting = text_channel(guild, "meeting", {guild.default_role: HIDE, staff_role: SHOW, guest: SHOW})
    assert staff.id not in await quotable(meeting)


async def test_a_cached_member_let_in_is_judged_by_the_roles_they_hold(guild, general, member):
    muted = make_role(guild, "muted", discord.Permissions.none())
    backend.update_text_channel(general, muted, HIDE)
    vip = text_channel(guild, "vip", {guild.default_role: HIDE, member: SHOW})
    assert general.id in await quotable(vip)


async def test_a_member_let_in_whose_roles_are_unknown_may_hold_any_role(guild, general):
    muted = make_role(guild, "muted", discord.Permissions.none())
    backend.update_text_channel(general, muted, HIDE)
    gone = discord.Object(id=backend.facts.make_id(), type=discord.Member)  # not in the member cache
    vip = text_channel(guild, "vip", {guild.default_role: HIDE, gone: SHOW})
    assert general.id not in await quotable(vip)


async def test_a_channel_whose_history_everyone_is_denied_is_not_quoted(guild, general):
    announcements = text_channel(guild, "announcements",
                                 {guild.default_role: discord.PermissionOverwrite(read_message_history=False)})
    assert announcements.id not in await quotable(general)


async def test_a_role_that_sees_here_but_is_denied_there_keeps_there_out(guild, general):
    muted = make_role(guild, "muted", discord.Permissions.none())
    lounge = text_channel(guild, "lounge", {muted: HIDE})
    assert lounge.id not in await quotable(general)


async def test_a_channel_only_administrators_read_is_not_quoted_where_everyone_reads(guild, general):
    make_role(guild, "admin", discord.Permissions(administrator=True))
    admins = text_channel(guild, "admins", {guild.default_role: HIDE})
    assert admins.id not in await quotable(general)


async def test_a_channel_only_administrators_see_may_quote_every_channel(guild, general, staff):
    admin_role = make_role(guild, "admin", discord.Permissions(administrator=True))
    admins = text_channel(guild, "admins", {guild.default_role: HIDE, admin_role: HIDE})
    assert {general.id, staff.id, admins.id} <= await quotable(admins)


async def test_a_private_thread_is_not_quoted_in_its_parent(guild, general, member):
    private = make_thread(guild, general, private=True, members=[member], owner=member)
    assert private.id not in await quotable(general)


async def test_a_private_thread_is_quoted_inside_itself(guild, general, member):
    private = make_thread(guild, general, private=True, members=[member], owner=member)
    assert private.id in await quotable(private)


async def test_a_reply_in_a_private_thread_quotes_no_other_private_thread(guild, general, member):
    private = make_thread(guild, general, private=True, members=[member], owner=member)
    other = make_thread(guild, general, private=True, members=[member], owner=member)
    assert other.id not in await quotable(private)


async def test_a_reply_in_a_private_thread_quotes_what_its_parent_reads(guild, general, member):
    private = make_thread(guild, general, private=True, members=[member], owner=member)
    assert {c.id for c in guild.text_channels} <= await quotable(private)


async def test_a_public_thread_of_a_role_only_channel_is_not_quoted_where_everyone_reads(guild, general, staff):
    thread = make_thread(guild, staff)
    audience = await AudienceCache().audience(general)
    assert (thread.id in audience.channel_ids, staff.id in audience.thread_parent_ids) == (False, False)


async def test_a_public_thread_of_a_role_only_channel_is_quoted_in_that_channel(guild, staff):
    thread = make_thread(guild, staff)
    audience = await AudienceCache().audience(staff)
    assert (thread.id in audience.channel_ids, staff.id in audience.thread_parent_ids) == (True, True)


async def test_a_reply_in_a_public_thread_reads_as_its_parent(guild, general, staff):
    thread = make_thread(guild, general)
    assert (await quotable(thread)) & {general.id, thread.id, staff.id} == {general.id, thread.id}


async def test_a_reply_in_a_public_thread_of_a_role_only_channel_reads_as_that_channel(guild, general, staff):
    thread = make_thread(guild, staff)
    assert {general.id, staff.id, thread.id} <= await quotable(thread)


async def test_the_rule_follows_an_overwrite_change(guild, general):
    cache = AudienceCache()
    notes = guild.text_channels[1]
    before = notes.id in (await cache.audience(general)).channel_ids
    backend.update_text_channel(notes, guild.default_role, HIDE)
    after = notes.id in (await cache.audience(general)).channel_ids
    assert (before, after) == (True, False)


async def test_the_rule_follows_a_role_change(guild, general):
    cache = AudienceCache()
    before = (await cache.audience(general)).channel_ids
    everyone = guild.default_role
    backend.update_role(everyone, permissions=everyone.permissions.value & ~discord.Permissions(
        read_message_history=True).value)
    after = (await cache.audience(general)).channel_ids
    assert (general.id in before, after) == (True, frozenset())


async def test_the_rule_follows_a_role_given_to_a_member_let_in(guild, general, member):
    cache = AudienceCache()
    muted = make_role(guild, "muted", discord.Permissions.none())
    backend.update_text_channel(general, muted, HIDE)
    vip = text_channel(guild, "vip", {guild.default_role: HIDE, member: SHOW})
    before = general.id in (await cache.audience(vip)).channel_ids
    give_role(member, muted)
    after = general.id in (await cache.audience(vip)).channel_ids
    assert (before, after) == (True, False)


async def test_when_everyone_is_an_administrator_every_channel_is_quoted(guild, general, staff):
    backend.update_role(guild.default_role, permissions=discord.Permissions(administrator=True).value)
    assert {general.id, staff.id} <= await quotable(general)
