"""Serves the admin web dashboard from the bot's event loop while the cog is loaded, when it is configured."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from discord.ext import commands

from ..dashboard import Dashboard, DashboardConfig, MetricsRecorder
from ..dashboard.memory_source import MemorySource

if TYPE_CHECKING:
    from bot import MemoryBot

    from .catchup import CatchUp

log = logging.getLogger(__name__)


def dashboard_for(bot: MemoryBot, catch_up: CatchUp | None) -> Dashboard | None:
    """The dashboard the settings ask for (MEMORY_DASHBOARD_PORT ...), or None: off."""
    config = DashboardConfig.from_settings(bot.db_path.parent, bot.config)
    if config is None:
        return None
    recorder = MetricsRecorder()
    source = MemorySource(
        lambda: bot.memory, profiles_dir=bot.profiles_dir, recorder=recorder,
        catch_up=(lambda guild_id: catch_up.status.get(guild_id)) if catch_up is not None else None,
        guild_name=lambda guild_id: getattr(bot.get_guild(guild_id), "name", None),
        save_profile_choice=bot.save_profile_choice)
    return Dashboard(source, config, recorder)


class MemoryDashboard(commands.Cog):
    """``cog_load`` starts the web server, ``cog_unload`` stops it; a port already taken leaves the bot running."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    async def cog_load(self) -> None:
        try:
            await self.dashboard.start()
        except OSError as error:
            log.error("The memory dashboard could not listen on %s:%d (%s); set MEMORY_DASHBOARD_PORT to a free "
                      "port", self.dashboard.config.host, self.dashboard.config.port, error.strerror)

    async def cog_unload(self) -> None:
        await self.dashboard.stop()
