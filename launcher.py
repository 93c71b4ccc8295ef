"""``python launcher.py`` (or ``python bot.py``): starts the memory bot — reads the token and settings from the
environment and ``.env``, tunes the interpreter for a busy event loop, picks the shards, and runs until a signal."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

import discord

from bot import MemoryBot, ShardedMemoryBot
from cogs.memory.runtime.config import ENV_FILE, Settings, SettingsError, export_library_variables, load_settings
from cogs.memory.runtime.logs import chosen_level, route_library_logs

log = logging.getLogger(__name__)

NO_TOKEN_HELP = """\
No Discord bot token found: set DISCORD_TOKEN in the environment or in a .env file next to bot.py.

  1. Open https://discord.com/developers/applications and click "New Application".
  2. In "Bot", click "Reset Token", copy it, and put it in .env as:  DISCORD_TOKEN=your-token-here
  3. Still in "Bot", under "Privileged Gateway Intents", enable MESSAGE CONTENT INTENT and SERVER MEMBERS INTENT.
  4. Invite the bot and sync its commands: follow "Set up the bot" in README.md (scopes: bot applications.commands).
"""


# The embedding, reranking and SQLite threads share the GIL with the event loop. Python's default 5 ms switch
# interval lets a busy worker thread hold the loop off for several intervals in a row (bench.loop measured
# 250 ms gaps under load); 0.5 ms hands the GIL back to the loop promptly at no measurable throughput cost.
GIL_SWITCH_INTERVAL_S = 0.0005


def tune_interpreter() -> None:
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


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
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log one level more per -v (from LOG_LEVEL, else INFO): -v is DEBUG")
    parser.add_argument("-q", "--quiet", action="count", default=0,
                        help="log one level less per -q: -q is WARNING, -qq ERROR")
    args = parser.parse_args(argv)
    if args.shard_ids is not None:
        if args.shards is None:
            parser.error("--shard-ids needs --shards N (the total across all processes)")
        outside = [shard for shard in args.shard_ids if not 0 <= shard < args.shards]
        if outside:
            parser.error(f"--shard-ids must be between 0 and {args.shards - 1} for --shards {args.shards}; "
                         f"you gave {', '.join(map(str, outside))}")
    return args


def create_bot(args: argparse.Namespace, settings: Settings) -> MemoryBot:
    """The bot ``main`` runs: settings from the environment and .env, shards from the command line."""
    options: dict[str, Any] = {
        "bot_admin_ids": settings.bot_admin_ids,
        "dev_guild_id": settings.dev_guild_id,
        "sync_on_start": args.sync,
        "store_dms": settings.memory_store_dms,
        "config": settings,
    }
    if args.shards is None:
        return MemoryBot(**options)
    return ShardedMemoryBot(**options, shard_count=args.shards, shard_ids=args.shard_ids)


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
    args = parse_args(argv)
    try:
        settings = load_settings(env_file=ENV_FILE)  # values already in the environment win over .env
    except SettingsError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        return 1
    if settings.discord_token is None or not settings.discord_token.get_secret_value().strip():
        print(NO_TOKEN_HELP, file=sys.stderr)
        return 2
    export_library_variables(ENV_FILE)
    discord.utils.setup_logging(level=chosen_level(settings.log_level, args.verbose, args.quiet))
    route_library_logs()
    tune_interpreter()
    bot = create_bot(args, settings)
    try:
        asyncio.run(run_bot(settings.discord_token.get_secret_value().strip(), bot))
    except discord.LoginFailure:
        log.error("Discord rejected DISCORD_TOKEN; reset it in the Developer Portal and update .env")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
