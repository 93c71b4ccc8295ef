"""The audience rule against discord.py itself: random guilds where some member holds every combination of roles.

With every combination present, "everyone who sees C reads X" can be checked member by member through
``permissions_for``; the rule, which never looks at members, must give exactly the same answer.
"""

import itertools
import random

import discord
import discord.ext.test as dpytest
import pytest
from discord.ext.test import backend

from cogs.memory.cog.audience import AudienceCache

ROLES = 4
CHANNELS = 6
CHOICES = (None, True, False)


@pytest.fixture
def guild(discord_bot):
    return dpytest.get_config().guilds[0]


def random_overwrite(rng: random.Random) -> discord.PermissionOverwrite:
    return discord.PermissionOverwrite(view_channel=rng.choice(CHOICES), read_message_history=rng.choice(CHOICES))


def random_permissions(rng: random.Random, *, admin_chance: float) -> int:
    permissions = discord.Permissions(view_channel=rng.random() < 0.6, read_message_history=rng.random() < 0.6,
                                      administrator=rng.random() < admin_chance)
    return permissions.value


def overwrite_payload(target: discord.abc.Snowflake, overwrite: discord.PermissionOverwrite) -> dict:
    allow, deny = overwrite.pair()
    kind = 0 if isinstance(target, discord.Role) else 1
    return {"id": str(target.id), "type": kind, "allow": str(allow.value), "deny": str(deny.value)}


def random_guild(guild: discord.Guild, rng: random.Random) -> list[discord.TextChannel]:
    """Random @everyone and role permissions, a member for every set of roles, and channels with random overwrites
    (for @everyone, some roles and some members)."""
    backend.update_role(guild.default_role, permissions=random_permissions(rng, admin_chance=0.0))
    roles = [backend.make_role(f"role{n}", guild, permissions=random_permissions(rng, admin_chance=0.15))
             for n in range(ROLES)]
    for count in range(ROLES + 1):
        for held in itertools.combinations(roles, count):
            user = backend.make_user(f"holder{rng.randrange(10**9)}", "0001")
            backend.make_member(user, guild, roles=list(held))
    members = [m for m in guild.members if not m.bot]
    channels = []
    for n in range(CHANNELS):
        targets = [guild.default_role, *rng.sample(roles, rng.randint(0, ROLES)),
                   *rng.sample(members, rng.randint(0, 2))]
        payload = [overwrite_payload(target, random_overwrite(rng)) for target in targets]
        channels.append(backend.make_text_channel(f"channel{n}", guild, permission_overwrites=payload))
    return channels


def reads(channel: discord.TextChannel, member: discord.Member) -> bool:
    permissions = channel.permissions_for(member)
    return permissions.view_channel and permissions.read_message_history


def quotable_by_walking_members(where: discord.TextChannel, channels: list[discord.TextChannel]) -> frozenset[int]:
    audience = [m for m in where.guild.members if where.permissions_for(m).view_channel]
    return frozenset(x.id for x in channels if all(reads(x, m) for m in audience))


@pytest.mark.parametrize("seed", range(12))
async def test_the_rule_agrees_with_walking_every_member(guild, seed):
    channels = random_guild(guild, random.Random(seed))
    cache = AudienceCache()
    ours = {c.id: (await cache.audience(c)).channel_ids & {x.id for x in channels} for c in channels}
    assert ours == {c.id: quotable_by_walking_members(c, channels) for c in channels}
