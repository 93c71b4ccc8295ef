"""The memory cog's Discord surface: slash commands, gateway listeners, and everything a user reads.

Loaded as the ``cogs.memory.cog`` extension. Unloading or reloading it re-imports only this package: the core
(``cogs.memory.*``) and the bot's open ``Memory`` stay as they are.

May import: the ``Memory`` facade, ``records``, ``guild_policy``, ``prompt`` and ``llm`` (an answer's prompt and the
client that asks for it), ``ingest.report`` and ``ingest.content``, the store's history records (``store.history``),
and ``runtime.profile`` and ``vectors.embedding`` for what profile commands show and catch; it is the only part that
imports discord.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot import MemoryBot


async def setup(bot: MemoryBot) -> None:
    from .catchup import CatchUp
    from .commands import MemoryCommands
    from .dashboard import MemoryDashboard, dashboard_for
    from .latency import Latencies
    from .listeners import MemoryListeners

    catch_up = CatchUp(bot)
    dashboard = dashboard_for(bot, catch_up)  # None unless MEMORY_DASHBOARD_PORT is set
    latencies = Latencies(recorder=dashboard.recorder if dashboard is not None else None)
    await bot.add_cog(MemoryListeners(bot, latencies))
    await bot.add_cog(catch_up)
    await bot.add_cog(MemoryCommands(bot, latencies, catch_up))
    if dashboard is not None:
        await bot.add_cog(MemoryDashboard(dashboard))
