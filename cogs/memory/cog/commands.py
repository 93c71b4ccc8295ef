"""The ``/memory`` slash commands: search, stats, forget, opt-out, backfill, settings and the bot's profile."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from . import replies
from .backfill import backfill_command
from .catchup import CatchUp, heard_until_now
from .capture import parse_message_link
from .forgetting import ForgetPlan, confirm_and_forget, message_plan, not_recorded
from .export import ExportCommands
from .latency import Latencies
from .mine import MineCommands
from .options import DateTransformer, UserInputError, check_date_order, check_forget_options, options_checked
from .permissions import (
    NotBotAdmin,
    NotGuildAdmin,
    bot_admin_only,
    command_member,
    guild_admin_only,
    is_guild_admin,
    readable_channel_ids,
    readable_thread_parent_ids,
)
from .recall import format_memory_line
from .views import Paginator
from ..privacy.ledger import ErasureNotRecorded
from ..records import MAX_QUERY_CHARS, MAX_RESULTS, Hit, SearchFilters

if TYPE_CHECKING:
    from bot import MemoryBot

    from ..memory import Memory
    from ..runtime.profile import MemoryProfile

log = logging.getLogger(__name__)

RESULTS_PER_PAGE = 5
ForgetWhat = Literal["my messages", "a channel", "a member", "a message"]
# Longer than any "Copy Message Link" URL (about 90 characters).
MESSAGE_LINK_MAX_CHARS = 200
PROFILE_NAME_MAX_CHARS = 100
# Channels whose messages memory holds (a voice channel has a text chat; forum posts are threads).
ReadableChannel = discord.TextChannel | discord.Thread | discord.VoiceChannel


class MemoryNotReady(app_commands.AppCommandError):
    """The memory core is still loading its models, waits for its database, or failed to open."""


def result_pages(query: str, results: Sequence[Hit]) -> list[discord.Embed]:
    """Embeds of ``RESULTS_PER_PAGE`` numbered results each, with the page count in the footer."""
    starts = range(0, len(results), RESULTS_PER_PAGE)
    pages = []
    for number, start in enumerate(starts, start=1):
        chunk = results[start : start + RESULTS_PER_PAGE]
        lines = [f"{start + i}. {format_memory_line(c)}" for i, c in enumerate(chunk, start=1)]
        embed = discord.Embed(title=f"Memory search: {query[:200]}", description="\n".join(lines))
        embed.set_footer(text=f"Page {number}/{len(starts)} · {len(results)} results")
        pages.append(embed)
    return pages


class MemoryCommands(MineCommands, ExportCommands, commands.GroupCog, group_name="memory",
                     group_description="Search and manage the bot's memory"):
    profile = app_commands.Group(name="profile", description="The hardware profile that sizes the memory models")

    def __init__(self, bot: MemoryBot, latencies: Latencies | None = None, catch_up: CatchUp | None = None) -> None:
        self.bot = bot
        self.latencies = latencies or Latencies()
        self.catch_up = catch_up
        self._backfills: set[int] = set()
        self._exporting: set[tuple[int, int]] = set()  # (guild, member) whose export is being made

    def memory(self) -> Memory:
        if self.bot.memory is None:
            raise MemoryNotReady(replies.MEMORY_FAILED if self.bot.memory_error else replies.MEMORY_UNREACHABLE
                                 if self.bot.memory_unreachable else replies.MEMORY_LOADING)
        return self.bot.memory

    async def cog_app_command_error(self, interaction: discord.Interaction, error: app_commands.AppCommandError) -> None:
        if isinstance(error, (MemoryNotReady, UserInputError, NotGuildAdmin, NotBotAdmin)):
            message = str(error)
        elif isinstance(error, app_commands.NoPrivateMessage):
            message = replies.GUILD_ONLY
        elif isinstance(error, app_commands.TransformerError):
            message = replies.BAD_OPTION.format(value=error.value)
        elif isinstance(error, app_commands.CommandInvokeError) and isinstance(error.original, ErasureNotRecorded):
            message = self._not_recorded(interaction, error.original)
        else:
            log.error("Command %r failed in guild %s", interaction.command and interaction.command.qualified_name,
                          interaction.guild_id, exc_info=error)
            message = replies.UNEXPECTED
        if interaction.response.is_done():
            await interaction.followup.send(message, ephemeral=True)
        else:
            await interaction.response.send_message(message, ephemeral=True)

    @staticmethod
    def _not_recorded(interaction: discord.Interaction, error: ErasureNotRecorded) -> str:
        return not_recorded(interaction, error)

    # -- search and stats ---------------------------------------------------------------------------------

    @app_commands.command(name="search", description="Search this server's memory (only channels you can read)")
    @app_commands.describe(
        query="What to look for",
        channel="Only this channel or thread",
        author="Only messages by this member",
        after="Only messages after this date (YYYY-MM-DD, UTC)",
        before="Only messages before this date (YYYY-MM-DD, UTC)",
        limit=f"How many results (1-{MAX_RESULTS})",
    )
    @app_commands.guild_only()
    @options_checked()
    async def search(
        self,
        interaction: discord.Interaction,
        query: app_commands.Range[str, 1, MAX_QUERY_CHARS],
        channel: ReadableChannel | None = None,
        author: discord.User | None = None,
        after: app_commands.Transform[datetime, DateTransformer] | None = None,
        before: app_commands.Transform[datetime, DateTransformer] | None = None,
        limit: app_commands.Range[int, 1, MAX_RESULTS] = 10,
    ) -> None:
        check_date_order(after, before)
        memory = self.memory()
        member = command_member(interaction)
        allowed = readable_channel_ids(member)
        if channel is not None and channel.id not in allowed:
            raise UserInputError(replies.CANNOT_READ_CHANNEL.format(channel=channel.mention))
        await interaction.response.defer(ephemeral=True, thinking=True)
        filters = SearchFilters(
            guild_id=member.guild.id,
            channel_ids=frozenset({channel.id}) if channel else None,
            author_ids=frozenset({author.id}) if author else None,
            after=after,
            before=before,
            allowed_channel_ids=allowed,
            public_thread_parent_ids=readable_thread_parent_ids(member, allowed),
        )
        recall = await memory.recall(query, filters, limit)
        self.latencies.searched(recall)
        memory.quotations.note(recall.hits, "search", member.id)  # the quote's channel and time; never who searched
        if not recall.hits:
            await interaction.followup.send(replies.NO_RESULTS, ephemeral=True)
            return
        view = Paginator(interaction.user.id, result_pages(query, recall.hits))
        await interaction.followup.send(embed=view.current, view=view, ephemeral=True)

    @app_commands.command(name="stats", description="How much this server's memory holds and how fast it answers")
    @app_commands.guild_only()
    @options_checked()
    async def stats(self, interaction: discord.Interaction) -> None:
        memory = self.memory()
        guild = command_member(interaction).guild
        await interaction.response.defer(ephemeral=True, thinking=True)
        stats = await memory.stats(guild.id)
        reranker = memory.reranker.status() if memory.reranker is not None else None
        latencies = {"search": self.latencies.search_ms, "recall": self.latencies.recall_ms}
        catch_up = self.catch_up.status.get(guild.id) if self.catch_up is not None else None
        embed = replies.stats_embed(guild.name, stats, memory.profile.name, reranker, latencies, catch_up)
        await interaction.followup.send(embed=embed, ephemeral=True)

    # -- forgetting and opting out ------------------------------------------------------------------------

    @app_commands.command(name="forget", description="Make the bot forget messages (asks you to confirm first)")
    @app_commands.describe(
        what="What to forget: your messages, a whole channel or member (admins), or one message",
        channel="With 'my messages': only in this channel. With 'a channel': the channel to forget",
        member="With 'a member': whose messages to forget (admins)",
        message_link="With 'a message': its link (right-click the message, Copy Message Link)",
    )
    @app_commands.guild_only()
    @options_checked()
    async def forget(
        self,
        interaction: discord.Interaction,
        what: ForgetWhat,
        channel: ReadableChannel | None = None,
        member: discord.User | None = None,
        message_link: app_commands.Range[str, 1, MESSAGE_LINK_MAX_CHARS] | None = None,
    ) -> None:
        check_forget_options(what, channel=channel, member=member, message_link=message_link)
        memory = self.memory()
        plan = await self._forget_plan(interaction, memory, what, channel, member, message_link)
        await confirm_and_forget(interaction, memory, plan)

    async def _forget_plan(
        self,
        interaction: discord.Interaction,
        memory: Memory,
        what: ForgetWhat,
        channel: ReadableChannel | None,
        member: discord.User | None,
        message_link: str | None,
    ) -> ForgetPlan:
        """What will be forgotten (in words) and the coroutine function that does it, after checking who asks."""
        user = command_member(interaction)
        guild_id = user.guild.id
        if what == "my messages":
            if channel is None:
                return "all your messages in this server", lambda: memory.forget_author(guild_id, user.id)
            return (
                f"your messages in {channel.mention}",
                lambda: memory.forget_author(guild_id, user.id, channel_id=channel.id),
            )
        if what == "a message":
            return await self._forget_message_plan(interaction, memory, message_link)
        if not is_guild_admin(user):
            raise NotGuildAdmin(replies.FORGET_ADMIN_ONLY)
        if what == "a channel":
            if channel is None:
                raise UserInputError(replies.FORGET_NEEDS_CHANNEL)
            return f"everything in {channel.mention}", lambda: memory.forget_channel(guild_id, channel.id)
        if member is None:
            raise UserInputError(replies.FORGET_NEEDS_MEMBER)
        return f"all messages by {member.mention}", lambda: memory.forget_author(guild_id, member.id)

    async def _forget_message_plan(
        self, interaction: discord.Interaction, memory: Memory, message_link: str | None
    ) -> ForgetPlan:
        member = command_member(interaction)
        parsed = parse_message_link(message_link or "")
        if parsed is None or parsed[0] != member.guild.id:
            raise UserInputError(replies.FORGET_BAD_LINK)
        _, channel_id, message_id = parsed
        stored_in = await memory.stored_channel(member.guild.id, message_id)
        if stored_in is not None and stored_in != channel_id:  # the link's channel part does not name where it was said
            raise UserInputError(replies.FORGET_BAD_LINK)
        return await message_plan(member, memory, message_id)

    @app_commands.command(name="optout", description="Stop the bot remembering your messages here, and forget them")
    @app_commands.guild_only()
    @options_checked()
    async def optout(self, interaction: discord.Interaction) -> None:
        memory = self.memory()
        member = command_member(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        await memory.set_opt_out(member.guild.id, member.id, True)
        count = await memory.forget_author(member.guild.id, member.id)
        await memory.purge()
        await interaction.followup.send(replies.OPTED_OUT.format(count=count), ephemeral=True)

    @app_commands.command(name="optin", description="Let the bot remember your messages here again")
    @app_commands.guild_only()
    @options_checked()
    async def optin(self, interaction: discord.Interaction) -> None:
        memory = self.memory()
        member = command_member(interaction)
        await memory.set_opt_out(member.guild.id, member.id, False)
        await interaction.response.send_message(replies.OPTED_IN, ephemeral=True)

    # -- admin: backfill and settings ---------------------------------------------------------------------

    @app_commands.command(name="backfill", description="Read a channel's history into memory (admins; resumable)")
    @app_commands.describe(channel="The channel or thread to read", limit="At most this many messages this run")
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @options_checked()
    @guild_admin_only()
    async def backfill(
        self,
        interaction: discord.Interaction,
        channel: discord.TextChannel | discord.Thread | discord.VoiceChannel,
        limit: app_commands.Range[int, 1, 100_000] = 1000,
    ) -> None:
        await backfill_command(self.memory(), interaction, channel, limit, self._backfills)

    @app_commands.command(name="settings", description="Show or change memory settings for this server (admins)")
    @app_commands.describe(
        auto_recall="Answer every message in the recall channels, not only mentions and replies",
        recall_channel="Add or remove this channel from the auto-recall channels",
        capture_channel="The channel whose capture to turn on or off (with 'capture')",
        capture="Whether messages in 'capture_channel' are remembered",
        retention_days="Forget messages older than this many days (0 keeps everything)",
        forget_on_leave="Forget a member's messages when they leave the server",
        store_bot_messages="Remember other bots' and webhooks' messages (this bot's own are always kept)",
        quotation_log="Note where members' messages were shown to others (ids and times; members see it)",
        quotation_retention_days="Keep those notes this many days",
        export_interval_hours="A member may download their data once in this many hours (0: no limit)",
    )
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @options_checked()
    @guild_admin_only()
    async def settings(
        self,
        interaction: discord.Interaction,
        auto_recall: bool | None = None,
        recall_channel: discord.TextChannel | None = None,
        capture_channel: discord.TextChannel | None = None,
        capture: bool | None = None,
        retention_days: app_commands.Range[int, 0, 3650] | None = None,
        forget_on_leave: bool | None = None,
        store_bot_messages: bool | None = None,
        quotation_log: bool | None = None,
        quotation_retention_days: app_commands.Range[int, 1, 3650] | None = None,
        export_interval_hours: app_commands.Range[int, 0, 8760] | None = None,
    ) -> None:
        memory = self.memory()
        guild_id = command_member(interaction).guild.id
        current = await memory.settings(guild_id)
        changes: dict[str, Any] = {}
        if auto_recall is not None:
            changes["auto_recall"] = auto_recall
        if recall_channel is not None:
            changes["recall_channel_ids"] = current.recall_channel_ids ^ {recall_channel.id}
        if (capture_channel is None) != (capture is None):
            raise UserInputError(replies.SETTINGS_CAPTURE_PAIR)
        if capture_channel is not None:
            disabled = current.capture_disabled_channel_ids
            changes["capture_disabled_channel_ids"] = (
                disabled - {capture_channel.id} if capture else disabled | {capture_channel.id}
            )
            if capture and capture_channel.id in disabled:  # what was said while it was off stays unstored
                await heard_until_now(memory, guild_id, capture_channel)
        if retention_days is not None:
            changes["retention_days"] = retention_days or None
        if forget_on_leave is not None:
            changes["forget_on_leave"] = forget_on_leave
        if store_bot_messages is not None:
            changes["store_bot_messages"] = store_bot_messages
        member_records = {"quotation_log": quotation_log, "quotation_retention_days": quotation_retention_days,
                          "export_interval_hours": export_interval_hours}
        changes.update({key: value for key, value in member_records.items() if value is not None})
        if changes:
            current = current.with_changes(**changes)
            await memory.save_settings(guild_id, current)
        await interaction.response.send_message(replies.settings_summary(current), ephemeral=True)

    # -- the process-wide profile -------------------------------------------------------------------------

    @profile.command(name="show", description="The profile this bot runs with")
    @options_checked()
    async def profile_show(self, interaction: discord.Interaction) -> None:
        memory = self.memory()
        await interaction.response.send_message(replies.profile_summary(memory.profile), ephemeral=True)

    async def _profiles(self) -> dict[str, MemoryProfile]:
        from ..runtime.profile import list_profiles

        profiles = await asyncio.to_thread(list_profiles, self.bot.profiles_dir)
        return {profile.name: profile for profile in profiles}

    @profile.command(name="list", description="Every profile this bot can switch to")
    @options_checked()
    async def profile_list(self, interaction: discord.Interaction) -> None:
        names = list(await self._profiles())
        current = self.bot.memory.profile.name if self.bot.memory else None
        await interaction.response.send_message(replies.profile_list(names, current), ephemeral=True)

    @profile.command(name="set", description="Switch the bot to another profile, live (bot admins)")
    @app_commands.describe(name="The profile to switch to")
    @options_checked()
    @bot_admin_only()
    async def profile_set(
        self, interaction: discord.Interaction, name: app_commands.Range[str, 1, PROFILE_NAME_MAX_CHARS]
    ) -> None:
        from ..vectors.embedding import EmbeddingModelError
        from ..runtime.profile import ProfileError

        memory = self.memory()
        new = (await self._profiles()).get(name)
        if new is None:
            raise UserInputError(replies.UNKNOWN_PROFILE.format(name=name))
        await interaction.response.defer(ephemeral=True, thinking=True)
        old = memory.profile
        try:
            await memory.switch_profile(new)
        except (ProfileError, EmbeddingModelError) as error:
            await interaction.followup.send(replies.PROFILE_SWITCH_FAILED.format(name=name, error=error), ephemeral=True)
            return
        await self.bot.save_profile_choice(name)
        log.info("%s switched the profile from %r to %r", interaction.user, old.name, name)
        await interaction.followup.send(replies.profile_changes(old, new), ephemeral=True)

    @profile_set.autocomplete("name")
    async def profile_name_autocomplete(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        names = [name for name in await self._profiles() if current.lower() in name.lower()]
        return [app_commands.Choice(name=name, value=name) for name in names[:25]]

    # -- owner: deliberate command sync -------------------------------------------------------------------

    @commands.command(name="sync", hidden=True)
    async def sync(self, ctx: commands.Context[MemoryBot]) -> None:
        """``@bot sync``: push slash commands to Discord (bot admins only)."""
        if not await self.bot.is_bot_admin(ctx.author):
            return
        try:
            synced = await self.bot.sync_commands()
        except discord.HTTPException as exc:
            log.warning("Slash command sync failed: %s", exc)
            await ctx.reply(replies.SYNC_FAILED.format(status=exc.status, error=exc.text or exc.response.reason))
            return
        await ctx.reply(replies.SYNCED.format(count=len(synced)))
