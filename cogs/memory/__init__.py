"""The memory cog: remembers a server's conversations and recalls the right ones. Loaded as ``cogs.memory``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# Idle OpenMP threads (torch's, under the embedder and the reranker) sleep instead of spinning: on a small box a
# spinning thread holds the core the event loop and SQLite need. Read once, when torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

if TYPE_CHECKING:
    from bot import MemoryBot


async def setup(bot: MemoryBot) -> None:
    from .cog.commands import MemoryCommands
    from .cog.listeners import MemoryListeners

    listeners = MemoryListeners(bot)
    await bot.add_cog(listeners)
    await bot.add_cog(MemoryCommands(bot, listeners))
