"""Forgetting one message, and the confirm step every forget passes: shared by /memory forget and the forget buttons
of /memory mine, so a button checks exactly what the command checks."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import discord

from . import replies
from .options import UserInputError
from .permissions import NotGuildAdmin, is_guild_admin
from .views import ConfirmView
from ..privacy.ledger import ErasureNotRecorded

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("ForgetPlan", "confirm_and_forget", "message_plan", "not_recorded")

log = logging.getLogger(__name__)

# What will be forgotten (in words), and what forgets it (returns how many messages went).
ForgetPlan = tuple[str, Callable[[], Awaitable[int]]]


def not_recorded(interaction: discord.Interaction, error: ErasureNotRecorded) -> str:
    """An erasure the ledger could not record was not done: the host reads why in the log, the member in a reply."""
    log.warning("%s in guild %s was not done: %s", interaction.command and interaction.command.qualified_name,
                interaction.guild_id, error)
    return replies.NOT_RECORDED.format(reason=error.reason)


async def message_plan(member: discord.Member, memory: Memory, message_id: int) -> ForgetPlan:
    """Forgetting one stored message of the member's guild: theirs (as memory stored it), or any for an admin."""
    if await memory.stored_channel(member.guild.id, message_id) is None:  # another guild's is not this one's
        raise UserInputError(replies.FORGET_NOT_STORED)
    if not is_guild_admin(member) and not await memory.written_by(member.guild.id, member.id, message_id):
        raise NotGuildAdmin(replies.FORGET_NOT_YOURS)
    return "that message", lambda: memory.forget_message(member.guild.id, message_id)


async def confirm_and_forget(interaction: discord.Interaction, memory: Memory, plan: ForgetPlan) -> None:
    """Ask the member to confirm (privately), then forget and erase it from the files before saying it is done."""
    description, action = plan
    view = ConfirmView(interaction.user.id)
    await interaction.response.send_message(replies.FORGET_CONFIRM.format(what=description), view=view,
                                            ephemeral=True)
    await view.wait()
    if not view.confirmed:
        await interaction.edit_original_response(content=replies.FORGET_CANCELLED, view=None)
        return
    try:
        count = await action()
    except ErasureNotRecorded as error:  # nothing was forgotten: the prompt says so in place of its buttons
        await interaction.edit_original_response(content=not_recorded(interaction, error), view=None)
        return
    await memory.purge()  # "forgot" means gone from the files too, not only from search
    await interaction.edit_original_response(content=replies.FORGOTTEN.format(count=count, what=description),
                                             view=None)
