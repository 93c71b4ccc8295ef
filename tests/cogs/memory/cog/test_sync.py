"""``@bot sync``: a bot admin pushes the /memory tree to Discord; anyone else is ignored and nothing is sent."""

from dataclasses import dataclass, field
from typing import Any

import discord
import pytest

from tests.fixtures.discord import bot_replies, give_role, make_role, say
from tests.fixtures.interactions import snowflake

MEMORY_SUBCOMMANDS = ["backfill", "export", "forget", "mine", "optin", "optout", "profile", "search", "settings", "stats"]


@dataclass
class FakeCommandsAPI:
    """Discord's application-command endpoints, answered locally: each bulk upsert is recorded with its body."""

    application_id: int
    upserts: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    refuse_with: discord.HTTPException | None = None

    async def request(self, route: discord.http.Route, **kwargs: Any) -> Any:
        if route.method != "PUT" or not route.path.endswith("/commands"):
            raise AssertionError(f"unexpected Discord request {route.method} {route.url}")
        if self.refuse_with is not None:
            raise self.refuse_with
        payload = kwargs["json"]
        self.upserts.append((route.url.removeprefix(route.BASE), payload))
        guild = {"guild_id": str(route.guild_id)} if route.guild_id is not None else {}
        return [{**command, **guild, "id": str(snowflake()), "application_id": str(self.application_id),
                 "version": str(snowflake())} for command in payload]


@pytest.fixture
def discord_api(memory_bot, monkeypatch) -> FakeCommandsAPI:
    """Only the network edge is fake: the tree builds the payload and the route as it would for Discord."""
    memory_bot._connection.application_id = memory_bot.user.id  # READY carries it; dpytest's gateway does not
    api = FakeCommandsAPI(memory_bot.application_id)
    # The tree keeps the HTTP client the bot was built with (dpytest swaps ``bot.http`` only afterwards).
    monkeypatch.setattr(memory_bot.tree._http, "request", api.request)
    return api


def commands_url(bot, guild_id=None):
    guild = f"/guilds/{guild_id}" if guild_id is not None else ""
    return f"/applications/{bot.application_id}{guild}/commands"


async def test_the_owner_syncs_the_memory_group_globally(memory_bot, discord_api, channel, member):
    memory_bot.owner_id = member.id
    await say(f"{memory_bot.user.mention} sync", member, channel)
    ((path, payload),) = discord_api.upserts
    assert (path, [c["name"] for c in payload]) == (commands_url(memory_bot), ["memory"])
    assert sorted(option["name"] for option in payload[0]["options"]) == MEMORY_SUBCOMMANDS


async def test_the_owner_is_told_how_many_commands_were_synced(memory_bot, discord_api, channel, member):
    memory_bot.owner_id = member.id
    await say(f"{memory_bot.user.mention} sync", member, channel)
    assert [(m.content, m.channel) for m in bot_replies()] == [("Synced 1 slash commands.", channel)]


async def test_a_bot_admin_from_bot_admin_ids_syncs(memory_bot, discord_api, channel, member):
    memory_bot.bot_admin_ids = frozenset({member.id})
    await say(f"{memory_bot.user.mention} sync", member, channel)
    assert ([path for path, _ in discord_api.upserts], [m.content for m in bot_replies()]) == (
        [commands_url(memory_bot)], ["Synced 1 slash commands."])


async def test_with_a_dev_guild_only_that_guild_gets_the_memory_group(memory_bot, discord_api, guild, channel, member):
    memory_bot.owner_id = member.id
    memory_bot.dev_guild_id = guild.id
    await say(f"{memory_bot.user.mention} sync", member, channel)
    ((path, payload),) = discord_api.upserts
    assert (path, [c["name"] for c in payload]) == (commands_url(memory_bot, guild.id), ["memory"])
    assert sorted(option["name"] for option in payload[0]["options"]) == MEMORY_SUBCOMMANDS


async def test_a_member_who_is_not_a_bot_admin_syncs_nothing_and_gets_no_answer(memory_bot, discord_api, channel,
                                                                                member):
    await say(f"{memory_bot.user.mention} sync", member, channel)
    assert (discord_api.upserts, bot_replies()) == ([], [])


async def test_a_server_admin_who_is_not_a_bot_admin_syncs_nothing(memory_bot, discord_api, guild, channel, member):
    admin = give_role(member, make_role(guild, "admin", discord.Permissions(administrator=True)))
    await say(f"{memory_bot.user.mention} sync", admin, channel)
    assert (discord_api.upserts, bot_replies()) == ([], [])


@dataclass
class FakeResponse:
    status: int
    reason: str


async def test_the_owner_is_told_when_discord_refuses_the_sync(memory_bot, discord_api, guild, channel, member):
    memory_bot.owner_id = member.id
    memory_bot.dev_guild_id = guild.id
    discord_api.refuse_with = discord.Forbidden(FakeResponse(403, "Forbidden"), {"code": 50001, "message": "Missing Access"})
    await say(f"{memory_bot.user.mention} sync", member, channel)
    assert [m.content for m in bot_replies()] == [
        "Discord refused the command sync (403: Missing Access). For a dev guild, check DEV_GUILD_ID and that the "
        "bot was invited there with the `applications.commands` scope."]
