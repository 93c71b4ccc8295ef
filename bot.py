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
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, wait_random_exponential
from tenacity.wait import wait_base

from cogs.memory.runtime.config import DB_PATH, INDEX_DIR, PROFILE_CHOICE_PATH, PROFILES_DIR, Settings, load_settings
from cogs.memory.runtime.safe_text import redacted_text

if TYPE_CHECKING:
    from cogs.memory.dashboard.memory_source import CatchUpLike
    from cogs.memory.dashboard.server import Dashboard
    from cogs.memory.ingest.spool import IngestSpool
    from cogs.memory.memory import Memory
    from cogs.memory.metrics import MetricsRecorder
    from cogs.memory.records import MessageRecord
    from cogs.memory.runtime.profile import MemoryProfile

log = logging.getLogger(__name__)

EXTENSIONS = ("cogs.memory.cog",)


# Young collections stay automatic, at Python's defaults; full ones never start from allocation counts.
GC_THRESHOLDS = (700, 10, 1_000_000)
# Full collections run from the bot instead: each minute when nothing is queued for ingest, or at the latest
# after ten minutes, so cyclic garbage cannot pile up under sustained load.
GC_IDLE_CHECK_S = 60
GC_MAX_INTERVAL_S = 600
# Between tries to open memory while its database cannot be reached: a random pause below a cap that doubles from 1 s
# to a minute ("full jitter"), so that shards started together do not all knock on the server at the same moment.
OPEN_RETRY_WAIT = wait_random_exponential(multiplier=1, max=60)


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
    ``memory`` is ``None`` and the cog tells users it is still loading. While its database (PostgreSQL) cannot be
    reached, opening is tried again (``open_retry_wait`` between tries), ``memory_unreachable`` says why, and what is
    captured meanwhile is kept in the ingest spool, which memory stores as it opens.
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
        open_retry_wait: wait_base = OPEN_RETRY_WAIT,
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
        self.open_retry_wait = open_retry_wait
        self.memory_unreachable: str | None = None  # why memory cannot open yet: its database cannot be reached
        self._outage_spool: IngestSpool | None = None  # keeps what is captured meanwhile
        self._memory_state = asyncio.Condition()  # notified as memory gets ready or fails, and as the spool opens
        self._memory_task: asyncio.Task[None] | None = None
        self._last_full_collection = time.monotonic()
        # The admin dashboard, and the recorder it shares with the memory cog's recalls, while it is served.
        self.dashboard: Dashboard | None = None
        self.metrics: MetricsRecorder | None = None

    async def setup_hook(self) -> None:
        await self.start_dashboard()  # first: the memory cog records its recalls in the dashboard's recorder
        for extension in EXTENSIONS:
            await self.load_extension(extension)
        if self.sync_on_start:
            await self.sync_commands()
        if self.open_memory:
            self._memory_task = asyncio.create_task(self._open_memory_when_connected(), name="memory-open")

    async def start_dashboard(self) -> None:
        """Serve the admin dashboard when the settings ask for it (MEMORY_DASHBOARD_PORT) until the bot closes. A port
        already taken is logged and leaves the bot running without it."""
        from cogs.memory.dashboard.config import DashboardConfig
        from cogs.memory.dashboard.memory_source import MemorySource
        from cogs.memory.dashboard.server import Dashboard
        from cogs.memory.metrics import MetricsRecorder

        config = DashboardConfig.from_settings(self.db_path.parent, self.config)
        if config is None:
            return
        recorder = MetricsRecorder()
        source = MemorySource(lambda: self.memory, profiles_dir=self.profiles_dir, recorder=recorder,
                              catch_up=self._catch_up_status,
                              guild_name=lambda guild_id: getattr(self.get_guild(guild_id), "name", None),
                              save_profile_choice=self.save_profile_choice)
        dashboard = Dashboard(source, config, recorder)
        try:
            await dashboard.start()
        except OSError as error:
            log.error("The memory dashboard could not listen on %s:%d (%s); set MEMORY_DASHBOARD_PORT to a free "
                      "port", config.host, config.port, error.strerror)
            return
        self.dashboard, self.metrics = dashboard, recorder

    def _catch_up_status(self, guild_id: int) -> CatchUpLike | None:
        """The memory cog's latest catch-up of a guild, for the dashboard's Overview; None while the cog is away."""
        catch_up = self.get_cog("MemoryCatchUp")
        if catch_up is None:
            return None
        status: dict[int, CatchUpLike] = getattr(catch_up, "status")  # the cog's module reloads: no isinstance
        return status.get(guild_id)

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
        from cogs.memory.memory import MemoryOpenError
        from cogs.memory.runtime.profile import ProfileError

        await self.wait_until_ready()
        try:
            memory = await self._open_memory_retrying()
            await self.attach_memory(memory)
            freeze_startup_objects()
            self.collect_garbage.start()
        except (MemoryOpenError, ProfileError) as error:  # it says what to fix: one line, no traceback
            await self._memory_failed(redacted_text(str(error)))
            log.error("Memory cannot start: %s", self.memory_error)
        except Exception as error:  # noqa: BLE001 - reported to users and logged; the bot keeps running
            await self._memory_failed(f"{type(error).__name__}: {redacted_text(str(error))}")
            log.exception("Could not open the memory core; memory commands will say so")
        finally:
            await self._stop_spooling()

    async def _open_memory_retrying(self) -> Memory:
        """Open memory, trying again while its database cannot be reached; any other failure is raised at once."""
        from cogs.memory.memory import DatabaseUnreachableError
        from cogs.memory.store.protocol import DatabaseUnavailableError  # the server lost while memory opened

        away = retry_if_exception_type((DatabaseUnreachableError, DatabaseUnavailableError))
        tries = AsyncRetrying(retry=away, wait=self.open_retry_wait, before_sleep=self._database_away, reraise=True)
        async for attempt in tries:
            with attempt:
                await self._stop_spooling()  # memory stores what the spool holds as it opens: nothing is added now
                memory = await self._load_memory()
        if self.memory_unreachable is not None:
            log.info("The database answers again (after %d tries); what was said meanwhile is stored",
                     tries.statistics.get("attempt_number", 0))
        return memory

    async def _database_away(self, retry_state: RetryCallState) -> None:
        """Between tries: the first failure is one WARNING, the others DEBUG; capture goes to the spool meanwhile."""
        error = retry_state.outcome.exception() if retry_state.outcome is not None else None
        pause = retry_state.next_action.sleep if retry_state.next_action is not None else 0.0
        first = self.memory_unreachable is None
        self.memory_unreachable = redacted_text(str(error))
        log.log(logging.WARNING if first else logging.DEBUG, "Memory cannot open yet: %s. The bot keeps trying "
                "(next in %.1f s, then at most a minute apart) and keeps what is said meanwhile to store it then",
                self.memory_unreachable, pause)
        await self._start_spooling()

    async def _start_spooling(self) -> None:
        from cogs.memory.ingest.spool import SPOOL_NAME, IngestSpool

        async with self._memory_state:
            if self._outage_spool is None:
                self._outage_spool = IngestSpool(self.db_path.parent / SPOOL_NAME)
            self._memory_state.notify_all()

    async def _stop_spooling(self) -> None:
        async with self._memory_state:  # a keep under way holds the condition: it ends before the spool closes
            spool, self._outage_spool = self._outage_spool, None
        if spool is not None:
            await spool.close()

    async def kept_while_database_away(self, record: MessageRecord) -> bool:
        """Wait until memory is ready (False: hand ``record`` to it) or, while its database cannot be reached, keep
        ``record`` in the ingest spool (True: memory stores it as it opens). False too when memory failed to open
        (it has no memory to go to) or the spool's disk refused it (it waits for memory instead)."""
        async with self._memory_state:
            await self._memory_state.wait_for(lambda: self.memory_ready.is_set() or self._outage_spool is not None)
            if self.memory_ready.is_set() or self._outage_spool is None:
                return False
            return await self._outage_spool.keep([record]) is not None

    async def _memory_failed(self, why: str) -> None:
        """Memory will not open: wake the listeners, which drop events instead of waiting forever."""
        self.memory_error, self.memory_unreachable = why, None
        self.memory_ready.set()
        async with self._memory_state:
            self._memory_state.notify_all()

    async def _load_memory(self) -> Memory:
        from cogs.memory.memory import Memory

        profile = await asyncio.to_thread(self.choose_profile)
        log.log(logging.DEBUG if self.memory_unreachable else logging.INFO, "Opening memory with profile %r at %s",
                profile.name, self.db_path)
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
        self.memory_error = self.memory_unreachable = None
        self.memory_ready.set()
        async with self._memory_state:
            self._memory_state.notify_all()
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
            await asyncio.gather(self._memory_task, return_exceptions=True)  # its spool closed, whatever it opened
        if self.dashboard is not None:
            dashboard, self.dashboard = self.dashboard, None
            await dashboard.stop()
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
