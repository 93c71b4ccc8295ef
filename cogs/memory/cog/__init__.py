"""The memory cog's Discord surface: slash commands, gateway listeners, and everything a user reads.

Loaded as the ``cogs.memory.cog`` extension. Unloading or reloading it re-imports only this package: the core
(``cogs.memory.*``) and the bot's open ``Memory`` stay as they are.

May import: the ``Memory`` facade, ``records``, ``guild_policy``, ``prompt`` and ``llm`` (an answer's prompt and the
client that asks for it), ``metrics`` (the bot's recorder, when it keeps one), ``ingest.report`` and ``ingest.content``,
the store's history records (``store.history``), what a member may see and take (``privacy.subject_access``,
``privacy.member_export``, ``store.member_rows``), ``privacy.ledger``'s ErasureNotRecorded, and ``runtime.profile``
and ``vectors.embedding`` for what profile commands show and catch; it is the only part that imports discord. Never the dashboard or the terminal (``cli``),
which sit beside it: the bot (bot.py) serves the dashboard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot import MemoryBot


async def setup(bot: MemoryBot) -> None:
    from .catchup import CatchUp
    from .commands import MemoryCommands
    from .latency import Latencies
    from .listeners import MemoryListeners

    catch_up = CatchUp(bot)
    latencies = Latencies(recorder=bot.metrics)  # the bot keeps one while it serves the dashboard
    await bot.add_cog(MemoryListeners(bot, latencies))
    await bot.add_cog(catch_up)
    await bot.add_cog(MemoryCommands(bot, latencies, catch_up))
