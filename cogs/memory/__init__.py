"""The memory cog: remembers a server's conversations and recalls the right ones. Loaded as ``cogs.memory``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot import MemoryBot


async def setup(bot: MemoryBot) -> None:
    from ._cog import MemoryCommands
    from ._listeners import MemoryListeners

    listeners = MemoryListeners(bot)
    await bot.add_cog(listeners)
    await bot.add_cog(MemoryCommands(bot, listeners))
