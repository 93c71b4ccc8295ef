"""The /memory command tree as Discord will see it: no collisions, every option described, admin hints set."""

from collections import Counter

import discord
from discord import app_commands


def test_command_names_do_not_collide(discord_bot):
    names = [command.qualified_name for command in discord_bot.tree.walk_commands()]
    assert [name for name, count in Counter(names).items() if count > 1] == []


def test_all_commands_live_under_one_memory_group(discord_bot):
    assert [command.name for command in discord_bot.tree.get_commands()] == ["memory"]


def test_the_expected_commands_exist(discord_bot):
    leaves = sorted(c.qualified_name for c in discord_bot.tree.walk_commands() if isinstance(c, app_commands.Command))
    assert leaves == [
        "memory backfill", "memory export", "memory forget", "memory mine", "memory optin", "memory optout",
        "memory profile list", "memory profile set", "memory profile show", "memory search", "memory settings",
        "memory stats",
    ]


def options(bot):
    """Each slash command's options, named as a member types them ("memory search query"), with the option."""
    for command in bot.tree.walk_commands():
        if isinstance(command, app_commands.Command):
            for param in command.parameters:
                yield f"{command.qualified_name} {param.name}", param


def test_every_option_has_a_description(discord_bot):
    undescribed = [name for name, param in options(discord_bot) if param.description == "…"]
    assert undescribed == []


def test_admin_commands_hint_manage_guild_to_the_client(discord_bot):
    group = discord_bot.tree.get_command("memory")
    hinted = {name for name in ("backfill", "settings") if group.get_command(name).default_permissions.manage_guild}
    assert hinted == {"backfill", "settings"}


def test_the_tree_serialises_for_sync(discord_bot):
    payload = discord_bot.tree.get_command("memory").to_dict(discord_bot.tree)
    assert payload["name"] == "memory" and len(payload["options"]) == 10


def test_every_command_checks_its_options_after_its_permission_checks(discord_bot):
    from cogs.memory.cog.options import declared_options_hold  # the loaded extension's own copy

    unchecked = [command.qualified_name for command in discord_bot.tree.walk_commands()
                 if isinstance(command, app_commands.Command) and command.checks[-1:] != [declared_options_hold]]
    assert unchecked == []


def test_every_text_and_number_option_declares_its_bounds(discord_bot):
    # What the bot checks a received value against; without bounds a crafted value could be any size.
    unbounded = [
        name for name, param in options(discord_bot)
        if (param.type is discord.AppCommandOptionType.string and param.max_value is None and not param.choices)
        or (param.type is discord.AppCommandOptionType.integer and None in (param.min_value, param.max_value))
    ]
    assert unbounded == []
