"""The memory bot: a ``commands.Bot`` that opens the memory core after connecting, and ``python bot.py`` to run it."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import discord
from discord.ext import commands, tasks

from cogs.memory.runtime.config import DB_PATH, INDEX_DIR, PROFILE_CHOICE_PATH, PROFILES_DIR

if TYPE_CHECKING:
    from cogs.memory.memory import Memory
    from cogs.memory.runtime.profile import MemoryProfile

log = logging.getLogger(__name__)

ENV_FILE = Path(__file__).resolve().parent / ".env"
EXTENSIONS = ("cogs.memory.cog",)

NO_TOKEN_HELP = """\
No Discord bot token found: set DISCORD_TOKEN in the environment or in a .env file next to bot.py.

  1. Open https://discord.com/developers/applications and click "New Application".
  2. In "Bot", click "Reset Token", copy it, and put it in .env as:  DISCORD_TOKEN=your-token-here
  3. Still in "Bot", under "Privileged Gateway Intents", enable MESSAGE CONTENT INTENT and SERVER MEMBERS INTENT.
  4. Invite the bot and sync its commands: follow "Set up the bot" in README.md (scopes: bot applications.commands).
"""


def parse_admin_ids(raw: str | None) -> frozenset[int]:
    """``BOT_ADMIN_IDS`` is a comma- or space-separated list of user ids; anything else is a configuration error."""
    if not raw:
        return frozenset()
    try:
        return frozenset(int(part) for part in raw.replace(",", " ").split())
    except ValueError:
        raise SystemExit(f"BOT_ADMIN_IDS must be user ids separated by commas, got {raw!r}") from None


# The embedding, reranking and SQLite threads share the GIL with the event loop. Python's default 5 ms switch
# interval lets a busy worker thread hold the loop off for several intervals in a row (bench.loop measured
# 250 ms gaps under load); 0.5 ms hands the GIL back to the loop promptly at no measurable throughput cost.
GIL_SWITCH_INTERVAL_S = 0.0005


# Young collections stay automatic, at Python's defaults; full ones never start from allocation counts.
GC_THRESHOLDS = (700, 10, 1_000_000)
# Full collections run from the bot instead: each minute when nothing is queued for ingest, or at the latest
# after ten minutes, so cyclic garbage cannot pile up under sustained load.
GC_IDLE_CHECK_S = 60
GC_MAX_INTERVAL_S = 600


def tune_interpreter() -> None:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


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
        from cogs.memory.runtime.config import database_url

        return await Memory.open(profile, self.db_path, self.index_dir, database_url())

    def choose_profile(self) -> MemoryProfile:
        from cogs.memory.runtime.profile_choice import saved_or_selected_profile

        return saved_or_selected_profile(self.profile_choice_path, self.profiles_dir)

    async def save_profile_choice(self, name: str) -> None:
        from cogs.memory.runtime.profile_choice import save_profile_choice

        await asyncio.to_thread(save_profile_choice, self.profile_choice_path, name)

    async def attach_memory(self, memory: Memory) -> None:
        """Hands an opened ``Memory`` to the bot (tests and benchmarks pass their own)."""
        self.memory = memory
        self.memory_error = None
        self.memory_ready.set()
        log.info("Memory is ready")

    async def on_command_error(self, context: commands.Context, error: commands.CommandError) -> None:
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


def shard_count(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number; you gave {value!r}") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1; you gave {count}")
    return count


def shard_ids(value: str) -> list[int]:
    try:
        ids = [int(part) for part in value.replace(",", " ").split()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be shard numbers separated by commas; you gave {value!r}") from None
    if not ids:
        raise argparse.ArgumentTypeError("is empty; give shard numbers separated by commas, e.g. 0,1")
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"names a shard twice: {value!r}")
    return ids


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run the Discord memory bot.")
    parser.add_argument("--sync", action="store_true", help="sync slash commands on start (DEV_GUILD_ID: that guild only)")
    parser.add_argument("--shards", type=shard_count, metavar="N",
                        help="total number of shards across all processes (default: one unsharded connection)")
    parser.add_argument("--shard-ids", type=shard_ids, metavar="a,b",
                        help="the shards this process runs, numbered from 0 (default with --shards: all N)")
    args = parser.parse_args(argv)
    if args.shard_ids is not None:
        if args.shards is None:
            parser.error("--shard-ids needs --shards N (the total across all processes)")
        outside = [shard for shard in args.shard_ids if not 0 <= shard < args.shards]
        if outside:
            parser.error(f"--shard-ids must be between 0 and {args.shards - 1} for --shards {args.shards}; "
                         f"you gave {', '.join(map(str, outside))}")
    return args


def create_bot(args: argparse.Namespace) -> MemoryBot:
    """The bot ``main`` runs: settings from the environment, shards from the command line."""
    dev_guild = os.environ.get("DEV_GUILD_ID", "").strip()
    settings: dict[str, Any] = {
        "bot_admin_ids": parse_admin_ids(os.environ.get("BOT_ADMIN_IDS")),
        "dev_guild_id": int(dev_guild) if dev_guild else None,
        "sync_on_start": args.sync,
        "store_dms": os.environ.get("MEMORY_STORE_DMS", "").strip().lower() in {"1", "true", "yes", "on"},
    }
    if args.shards is None:
        return MemoryBot(**settings)
    return ShardedMemoryBot(**settings, shard_count=args.shards, shard_ids=args.shard_ids)


async def run_bot(token: str, bot: MemoryBot) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, stop.set)
        except NotImplementedError:  # Windows: Ctrl-C still raises KeyboardInterrupt there
            pass
    async with bot:
        runner = asyncio.create_task(bot.start(token), name="discord")
        stopper = asyncio.create_task(stop.wait(), name="signals")
        done, _ = await asyncio.wait({runner, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stopper in done:
            log.info("Shutting down on signal")
        else:
            stopper.cancel()
        await bot.close()
        if runner in done:
            runner.result()  # surfaces a login failure such as a bad token
        else:
            await runner


def main(argv: list[str] | None = None) -> int:
    from dotenv import load_dotenv

    args = parse_args(argv)
    load_dotenv(ENV_FILE)  # values already in the environment win
    token = os.environ.get("DISCORD_TOKEN", "").strip()
    if not token:
        print(NO_TOKEN_HELP, file=sys.stderr)
        return 2
    discord.utils.setup_logging()
    tune_interpreter()
    bot = create_bot(args)
    try:
        asyncio.run(run_bot(token, bot))
    except discord.LoginFailure:
        log.error("Discord rejected DISCORD_TOKEN; reset it in the Developer Portal and update .env")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
