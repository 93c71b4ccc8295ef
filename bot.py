"""The memory bot: a ``commands.Bot`` that opens the memory core after connecting. Only the bot classes live here;
``python launcher.py`` (or the ``discord-memory-bot`` script) starts the process. ``python bot.py`` says so and exits.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands, tasks

from cogs.memory.runtime.config import DB_PATH, INDEX_DIR, PROFILE_CHOICE_PATH, PROFILES_DIR, Settings, load_settings

if TYPE_CHECKING:
    from cogs.memory.memory import Memory
    from cogs.memory.runtime.profile import MemoryProfile

log = logging.getLogger(__name__)

EXTENSIONS = ("cogs.memory.cog",)


# Young collections stay automatic, at Python's defaults; full ones never start from allocation counts.
GC_THRESHOLDS = (700, 10, 1_000_000)
# Full collections run from the bot instead: each minute when nothing is queued for ingest, or at the latest
# after ten minutes, so cyclic garbage cannot pile up under sustained load.
GC_IDLE_CHECK_S = 60
GC_MAX_INTERVAL_S = 600


def freeze_startup_objects() -> None:
    """Moves everything alive after the models loaded (modules, model objects: ~500k) out of the collector's
    reach, and leaves full collections to ``MemoryBot.collect_garbage``. A full collection walks every tracked
    object holding the GIL: measured here at 100-230 ms before the freeze, and 50-60 ms when one fell inside a
    5,000-message burst (bench.loop); either stalls the event loop for that long."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    log.info("Froze %d startup objects out of the garbage collector", gc.get_freeze_count())


def bot_intents() -> discord.Intents:
    intents = discord.Intents.default()
    intents.message_content = True
    intents.members = True
    return intents


class MemoryBot(commands.Bot):
    """Holds the process-wide resources the memory cog needs: the ``Memory`` facade and the admin list.

    The memory core loads models, so it opens in a background task after the gateway connects; until then
    ``memory`` is ``None`` and the cog tells users it is still loading.
    """

    def __init__(
        self,
        *,
        db_path: Path = DB_PATH,
        index_dir: Path = INDEX_DIR,
        profile_choice_path: Path = PROFILE_CHOICE_PATH,
        profiles_dir: Path | None = None,
        bot_admin_ids: frozenset[int] = frozenset(),
        dev_guild_id: int | None = None,
        sync_on_start: bool = False,
        store_dms: bool = False,
        open_memory: bool = True,
        config: Settings | None = None,
        intents: discord.Intents | None = None,
        **options: Any,
    ) -> None:
        super().__init__(
            command_prefix=commands.when_mentioned,
            intents=intents or bot_intents(),
            allowed_mentions=discord.AllowedMentions.none(),
            **options,
        )
        self.db_path = db_path
        self.index_dir = index_dir
        self.profile_choice_path = profile_choice_path
        self.profiles_dir = profiles_dir or PROFILES_DIR
        self.bot_admin_ids = bot_admin_ids
        self.dev_guild_id = dev_guild_id
        self.sync_on_start = sync_on_start
        self.store_dms = store_dms
        self.open_memory = open_memory
        # The process's settings (launcher.py reads them from the environment and .env); defaults when not given.
        self.config = config if config is not None else load_settings({}, env_file=None)
        self.memory: Memory | None = None
        self.memory_ready = asyncio.Event()
        self.memory_error: str | None = None
        self._memory_task: asyncio.Task[None] | None = None
        self._last_full_collection = time.monotonic()

    async def setup_hook(self) -> None:
        for extension in EXTENSIONS:
            await self.load_extension(extension)
        if self.sync_on_start:
            await self.sync_commands()
        if self.open_memory:
            self._memory_task = asyncio.create_task(self._open_memory_when_connected(), name="memory-open")

    async def sync_commands(self) -> list[discord.app_commands.AppCommand]:
        """Global sync, or an instant one to ``DEV_GUILD_ID`` while developing."""
        if self.dev_guild_id is not None:
            guild = discord.Object(self.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("Synced %d commands to dev guild %d", len(synced), self.dev_guild_id)
        else:
            synced = await self.tree.sync()
            log.info("Synced %d global commands (they can take up to an hour to appear)", len(synced))
        return synced

    async def _open_memory_when_connected(self) -> None:
        await self.wait_until_ready()
        try:
            await self.attach_memory(await self._load_memory())
            freeze_startup_objects()
            self.collect_garbage.start()
        except Exception as error:  # noqa: BLE001 - reported to users and logged; the bot keeps running
            self.memory_error = f"{type(error).__name__}: {error}"
            self.memory_ready.set()  # wake the listeners: with no memory they drop events instead of waiting forever
            log.exception("Could not open the memory core; memory commands will say so")

    async def _load_memory(self) -> Memory:
        from cogs.memory.memory import Memory

        profile = await asyncio.to_thread(self.choose_profile)
        log.info("Opening memory with profile %r at %s", profile.name, self.db_path)
        return await Memory.open(profile, self.db_path, self.index_dir, self.config.database)

    def choose_profile(self) -> MemoryProfile:
        from cogs.memory.runtime.profile_choice import saved_or_selected_profile

        return saved_or_selected_profile(self.profile_choice_path, self.profiles_dir, self.config.memory_profile)

    async def save_profile_choice(self, name: str) -> None:
        from cogs.memory.runtime.profile_choice import save_profile_choice

        await asyncio.to_thread(save_profile_choice, self.profile_choice_path, name)

    async def attach_memory(self, memory: Memory) -> None:
        """Hands an opened ``Memory`` to the bot (tests and benchmarks pass their own)."""
        self.memory = memory
        self.memory_error = None
        self.memory_ready.set()
        log.info("Memory is ready")

    async def on_command_error(self, context: commands.Context[Any], error: commands.CommandError) -> None:
        if isinstance(error, commands.CommandNotFound):
            return  # "@bot when is the picnic?" is a question for the memory cog, not a command
        await super().on_command_error(context, error)

    async def is_bot_admin(self, user: discord.abc.User) -> bool:
        """Bot admins change process-wide things: the application owner(s) and ``BOT_ADMIN_IDS``."""
        return user.id in self.bot_admin_ids or await self.is_owner(user)

    @tasks.loop(seconds=GC_IDLE_CHECK_S)
    async def collect_garbage(self) -> None:
        """A full collection when ingest is idle (few live objects, a short pause), or when one is overdue."""
        busy = self.memory is not None and self.memory.queued > 0
        if busy and time.monotonic() - self._last_full_collection < GC_MAX_INTERVAL_S:
            return
        started = time.perf_counter()
        found = gc.collect()
        self._last_full_collection = time.monotonic()
        log.debug("Full garbage collection: %d objects freed in %.1f ms", found, (time.perf_counter() - started) * 1e3)

    async def close(self) -> None:
        self.collect_garbage.cancel()
        # Stop taking events first, then let the core flush its queue, save indexes and close the database.
        if self._memory_task is not None and not self._memory_task.done():
            self._memory_task.cancel()
        await super().close()
        if self.memory is not None:
            memory, self.memory = self.memory, None
            self.memory_ready.clear()
            await memory.close()
            log.info("Memory closed: ingest queue flushed, indexes saved, database closed")


class ShardedMemoryBot(MemoryBot, commands.AutoShardedBot):
    """A MemoryBot that runs several gateway shards (discord.py's AutoShardedBot): ``--shards N [--shard-ids a,b]``.

    Each process runs the shards it is given; processes share one memory through ``DATABASE_URL`` (PostgreSQL).
    """


# Earlier docs started the bot with ``python bot.py``: say where the start moved instead of starting it from here
# (that imported this file a second time, as ``bot``, under launcher.py).
MOVED_START = "bot.py holds the bot classes only; start the bot with: python launcher.py"

if __name__ == "__main__":
    print(MOVED_START, file=sys.stderr)
    raise SystemExit(2)
