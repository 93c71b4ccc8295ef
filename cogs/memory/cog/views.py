"""Buttons for the memory commands: a paginator for search results and a confirm step for forgetting."""

from __future__ import annotations

from collections.abc import Sequence

import discord

__all__ = ("OwnedView", "Paginator", "ConfirmView")

VIEW_TIMEOUT_S = 180.0
NOT_YOURS = "These buttons belong to the member who ran the command."


class OwnedView(discord.ui.View):
    """A view only the member who ran the command may press."""

    def __init__(self, owner_id: int, *, timeout: float | None = VIEW_TIMEOUT_S) -> None:
        super().__init__(timeout=timeout)
        self.owner_id = owner_id

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        if interaction.user.id == self.owner_id:
            return True
        await interaction.response.send_message(NOT_YOURS, ephemeral=True)
        return False


class Paginator(OwnedView):
    """Pages of embeds with Previous / Next; the page counter lives in each embed's footer."""

    def __init__(self, owner_id: int, pages: Sequence[discord.Embed]) -> None:
        super().__init__(owner_id)
        self.pages = list(pages)
        self.index = 0
        self._update_buttons()

    # Not ``_refresh``: discord.py's View calls that with the components of each edit of the message.
    def _update_buttons(self) -> None:
        self.previous_page.disabled = self.index == 0
        self.next_page.disabled = self.index >= len(self.pages) - 1

    @property
    def current(self) -> discord.Embed:
        return self.pages[self.index]

    async def _show(self, interaction: discord.Interaction) -> None:
        self._update_buttons()
        await interaction.response.edit_message(embed=self.current, view=self)

    @discord.ui.button(label="Previous", style=discord.ButtonStyle.secondary)
    async def previous_page(self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]) -> None:
        self.index = max(self.index - 1, 0)
        await self._show(interaction)

    @discord.ui.button(label="Next", style=discord.ButtonStyle.secondary)
    async def next_page(self, interaction: discord.Interaction, button: discord.ui.Button[Paginator]) -> None:
        self.index = min(self.index + 1, len(self.pages) - 1)
        await self._show(interaction)


class ConfirmView(OwnedView):
    """Confirm / Cancel; ``confirmed`` is ``None`` after a timeout. The button press itself is deferred."""

    def __init__(self, owner_id: int) -> None:
        super().__init__(owner_id, timeout=60.0)
        self.confirmed: bool | None = None
        self.interaction: discord.Interaction | None = None

    async def _finish(self, interaction: discord.Interaction, confirmed: bool) -> None:
        self.confirmed = confirmed
        self.interaction = interaction
        await interaction.response.defer()
        self.stop()

    @discord.ui.button(label="Forget", style=discord.ButtonStyle.danger)
    async def confirm(self, interaction: discord.Interaction, button: discord.ui.Button[ConfirmView]) -> None:
        await self._finish(interaction, True)

    @discord.ui.button(label="Cancel", style=discord.ButtonStyle.secondary)
    async def cancel(self, interaction: discord.Interaction, button: discord.ui.Button[ConfirmView]) -> None:
        await self._finish(interaction, False)
