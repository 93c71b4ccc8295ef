"""Who may read what, and who may change what: the permission rules the memory cog enforces itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import discord
from discord import app_commands

__all__ = (
    "NotGuildAdmin",
    "NotBotAdmin",
    "can_read",
    "command_member",
    "readable_channel_ids",
    "readable_thread_parent_ids",
    "is_guild_admin",
    "guild_admin_only",
    "bot_admin_only",
)

ReadableChannel = discord.abc.GuildChannel | discord.Thread
# Channels that hold threads: text and news channels, forum and media channels (discord.py's ForumChannel).
ThreadParent = discord.TextChannel | discord.ForumChannel
T = TypeVar("T")


class NotGuildAdmin(app_commands.CheckFailure):
    """The member lacks Manage Server."""


class NotBotAdmin(app_commands.CheckFailure):
    """The user is neither the application owner nor listed in ``BOT_ADMIN_IDS``."""


def can_read(channel: ReadableChannel, member: discord.Member) -> bool:
    """Whether ``member`` can see this channel's past messages right now.

    ``permissions_for`` already folds in roles, channel overwrites (a synced channel's overwrites are its
    category's) and, for a thread, its parent's. A private thread is also limited to its members and moderators.
    """
    if isinstance(channel, discord.CategoryChannel):
        return False
    permissions = channel.permissions_for(member)
    if not (permissions.view_channel and permissions.read_message_history):
        return False
    if isinstance(channel, discord.Thread) and channel.is_private():
        return (
            permissions.manage_threads
            or channel.owner_id == member.id
            or any(thread_member.id == member.id for thread_member in channel.members)
        )
    return True


def readable_channel_ids(member: discord.Member) -> frozenset[int]:
    """Every channel and cached thread id in the member's guild they may read: the ``allowed_channel_ids`` filter."""
    guild = member.guild
    channels: list[ReadableChannel] = [*guild.channels, *guild.threads]
    return frozenset(channel.id for channel in channels if can_read(channel, member))


def readable_thread_parent_ids(member: discord.Member, readable: frozenset[int]) -> frozenset[int]:
    """Channels whose public threads the member may read, cached or archived: the ``public_thread_parent_ids`` filter.

    ``readable`` is ``readable_channel_ids(member)``, so permissions are worked out once per search. A public thread
    has no permissions of its own (``Thread.permissions_for`` is its parent's), so reading the parent is reading
    the thread. Private threads are never granted through here.
    """
    return frozenset(channel.id for channel in member.guild.channels
                     if isinstance(channel, ThreadParent) and channel.id in readable)


def command_member(interaction: discord.Interaction) -> discord.Member:
    """Who ran a guild-only command, as a member of the guild it ran in (``.guild``); a command run outside a guild
    gets the guild-only reply."""
    if not isinstance(interaction.user, discord.Member):
        raise app_commands.NoPrivateMessage()
    return interaction.user


def is_guild_admin(member: discord.Member | discord.User) -> bool:
    return isinstance(member, discord.Member) and member.guild_permissions.manage_guild


def guild_admin_only() -> Callable[[T], T]:
    """A check enforced in the bot; ``default_permissions`` only hides the command in the client."""

    async def predicate(interaction: discord.Interaction) -> bool:
        if not is_guild_admin(interaction.user):
            raise NotGuildAdmin("You need the Manage Server permission to use this command.")
        return True

    return app_commands.check(predicate)


def bot_admin_only() -> Callable[[T], T]:
    """Process-wide changes (the profile) are for the application owner and ``BOT_ADMIN_IDS`` only."""

    async def predicate(interaction: discord.Interaction) -> bool:
        is_bot_admin = getattr(interaction.client, "is_bot_admin", None)
        if is_bot_admin is None or not await is_bot_admin(interaction.user):
            raise NotBotAdmin(
                "Only the bot's owner or a bot admin (BOT_ADMIN_IDS) can change the profile, "
                "because it applies to every server."
            )
        return True

    return app_commands.check(predicate)
