"""``/memory export``: everything memory holds of the member who asks, in this server, as files sent to them alone
(JSON and a web page, zipped, in parts under the server's attachment limit). One export per member per server per
``export_interval_hours`` (a guild setting); counted only once every part was sent."""

from __future__ import annotations

import asyncio
import io
import logging
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from . import replies
from .mine import readable_now
from .options import UserInputError, options_checked
from .permissions import command_member, readable_channel_ids
from ..privacy.member_export import ExportRequest, ExportResult, write_member_export

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("ExportCommands",)

log = logging.getLogger(__name__)


def channel_names(member: discord.Member) -> dict[int, str]:
    """The names of the channels and cached threads the member can read now: no other channel is named."""
    readable = readable_channel_ids(member)
    places = [*member.guild.channels, *member.guild.threads]
    return {place.id: place.name for place in places if place.id in readable}


async def _send_parts(interaction: discord.Interaction, result: ExportResult) -> None:
    """Each part in its own private message (a part is as large as one message may carry)."""
    hidden = replies.EXPORT_HIDDEN.format(messages=result.hidden_messages) if result.hidden_messages else ""
    summary = replies.EXPORT_SENT.format(messages=result.messages, quotes=result.quotations,
                                         parts=len(result.parts), hidden=hidden).strip()
    for number, part in enumerate(result.parts, 1):
        data = await asyncio.to_thread(part.read_bytes)
        text = summary if number == 1 else replies.EXPORT_PART.format(number=number, parts=len(result.parts))
        await interaction.followup.send(text, file=discord.File(io.BytesIO(data), filename=part.name),
                                        ephemeral=True)


class ExportCommands(commands.Cog):
    """The ``/memory export`` command, mixed into the ``/memory`` group (commands.MemoryCommands)."""

    _exporting: set[tuple[int, int]]

    def memory(self) -> Memory:
        raise NotImplementedError  # MemoryCommands.memory

    @app_commands.command(name="export", description="Download everything the bot remembers of you here (only you)")
    @app_commands.guild_only()
    @options_checked()
    async def export(self, interaction: discord.Interaction) -> None:
        memory = self.memory()
        member = command_member(interaction)
        guild = member.guild
        hours = (await memory.settings(guild.id)).export_interval_hours
        due = await memory.subject_access.next_export_at(guild.id, member.id, hours)
        if due is not None:
            when = discord.utils.format_dt(datetime.fromtimestamp(due, UTC), "R")
            raise UserInputError(replies.EXPORT_NOT_YET.format(hours=hours, when=when))
        key = (guild.id, member.id)
        if key in self._exporting:
            raise UserInputError(replies.EXPORT_RUNNING)
        self._exporting.add(key)
        try:
            await interaction.response.defer(ephemeral=True, thinking=True)
            await self._export(interaction, memory, member)
        finally:
            self._exporting.discard(key)

    async def _export(self, interaction: discord.Interaction, memory: Memory, member: discord.Member) -> None:
        guild = member.guild
        request = ExportRequest(guild.id, guild.name, member.id, readable_now(member), channel_names(member),
                                await memory.is_opted_out(guild.id, member.id))
        folder = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="memory-export-"))  # 0700: the member's data
        try:
            result = await write_member_export(memory.subject_access, request, folder,
                                               part_limit=guild.filesize_limit)
            if result.holds_nothing:
                await interaction.followup.send(replies.EXPORT_NOTHING, ephemeral=True)
                return
            try:
                await _send_parts(interaction, result)
            except discord.HTTPException as error:
                log.warning("Sending an export in guild %d failed: %s", guild.id, error)
                await interaction.followup.send(replies.EXPORT_FAILED, ephemeral=True)
                return
            await memory.subject_access.exported(guild.id, member.id)
        finally:
            await asyncio.to_thread(shutil.rmtree, folder, True)
