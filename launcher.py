"""``python launcher.py`` (or the ``discord-memory-bot`` script): starts the memory bot — reads the token and settings
from the environment and ``.env``, tunes the interpreter for a busy event loop, picks the shards, and runs until a
signal. The bot classes live in bot.py."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import discord

from bot import MemoryBot, ShardedMemoryBot
from cogs.memory.runtime.config import (ENV_FILE, Settings, SettingsError, export_library_variables, load_settings,
                                       warn_unknown_variables)
from cogs.memory.runtime.logs import chosen_level, is_terminal, plain_formatter, quiet_libraries, route_library_logs
from cogs.memory.runtime.safe_text import redacted_text

log = logging.getLogger(__name__)

NO_TOKEN_HELP = """\
No Discord bot token found: set DISCORD_TOKEN in the environment or in a .env file next to launcher.py.

  1. Open https://discord.com/developers/applications and click "New Application".
  2. In "Bot", click "Reset Token", copy it, and put it in .env as:  DISCORD_TOKEN=your-token-here
  3. Still in "Bot", under "Privileged Gateway Intents", enable MESSAGE CONTENT INTENT and SERVER MEMBERS INTENT.
  4. Invite the bot and sync its commands: follow "Set up the bot" in README.md (scopes: bot applications.commands).
"""

PORTAL = "the Developer Portal (https://discord.com/developers/applications, your application, Bot)"
# What to check when discord.com cannot be reached, after the reason.
NETWORK_HELP = "check this machine's network, DNS and firewall (or set DISCORD_PROXY if it must use a proxy)"
# Gateway close codes that mean a setting is wrong (discord.py gives up on them; 4014 is PrivilegedIntentsRequired).
CLOSE_CODE_HELP = {
    4004: f"Discord rejected DISCORD_TOKEN: reset the token in {PORTAL} and put the new one in .env",
    4010: "Discord refused the shard numbers: --shard-ids must be below --shards",
    4011: "Discord asks this bot to shard (it is in too many servers for one connection): start it with --shards N",
    4013: "Discord refused the intents the bot asked for: report this as a bug",
}


class StartError(Exception):
    """The bot could not connect to Discord, or Discord refused it: the message is one line saying what to do."""


def _reason(error: OSError) -> str:
    """An OS error in words: "Connection refused" rather than asyncio's "Connect call failed ('1.2.3.4', 443)"."""
    if isinstance(error, aiohttp.ClientConnectorError):
        error = error.os_error
    if error.errno is not None and error.errno > 0:
        return os.strerror(error.errno)
    return error.strerror or str(error) or type(error).__name__


def _first_line(error: BaseException) -> str:
    """An error's first line (an HTTP error's text may be a whole HTML page), or its type when it says nothing."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _proxy_host(proxy: str | None) -> str:
    """DISCORD_PROXY's host and port, without its user and password."""
    return urlsplit(proxy).netloc.rpartition("@")[2] if proxy else "the proxy"


def connect_failure(error: BaseException, proxy: str | None = None) -> str | None:
    """What to tell the admin, in one line, when ``bot.start`` failed with ``error``; None for an error that is not
    about reaching Discord or being let in (a bug: its traceback is what helps)."""
    if isinstance(error, discord.LoginFailure):
        return f"Discord rejected DISCORD_TOKEN: reset the token in {PORTAL} and put the new one in .env"
    if isinstance(error, discord.PrivilegedIntentsRequired):
        return (f"Discord refused the privileged intents: turn on MESSAGE CONTENT INTENT and SERVER MEMBERS INTENT "
                f"in {PORTAL}, then start the bot again")
    if isinstance(error, discord.ConnectionClosed):
        return CLOSE_CODE_HELP.get(error.code or 0, f"Discord closed the connection (code {error.code}: "
                                                    f"{error.reason or 'no reason given'}); start the bot again")
    if isinstance(error, (discord.GatewayNotFound, discord.DiscordServerError)):
        return (f"Discord is not answering as it should ({_first_line(error)}): see https://discordstatus.com, and "
                "start the bot again later")
    if isinstance(error, aiohttp.ClientProxyConnectionError):
        where = _proxy_host(proxy)
        return (f"cannot reach the proxy in DISCORD_PROXY ({where}: {_reason(error)}): check that "
                "it runs and that the address is right, or unset DISCORD_PROXY")
    if isinstance(error, aiohttp.ClientHttpProxyError):  # its words hold the proxy's URL, password and all
        where = _proxy_host(proxy)
        fix = "check the user and password in DISCORD_PROXY" if error.status == 407 else "check DISCORD_PROXY"
        return f"the proxy in DISCORD_PROXY ({where}) refused the connection (HTTP {error.status}): {fix}"
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return f"cannot reach discord.com: its name does not resolve ({_reason(error)}): {NETWORK_HELP}"
    if isinstance(error, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError)):
        return (f"cannot reach discord.com securely ({_first_line(error)}): check the system clock and the CA "
                "certificates (or a proxy or firewall that intercepts TLS)")
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"cannot reach discord.com ({_reason(error)}): {NETWORK_HELP}"
    if isinstance(error, TimeoutError):  # asyncio's, and aiohttp's connect and read timeouts
        return f"cannot reach discord.com: it timed out: {NETWORK_HELP}"
    if isinstance(error, (OSError, aiohttp.ClientError)):  # refused, unreachable, reset, disconnected
        reason = _reason(error) if isinstance(error, OSError) else _first_line(error)
        return f"cannot reach discord.com ({reason}): {NETWORK_HELP}"
    if isinstance(error, discord.HTTPException):
        return f"Discord refused to let the bot in ({_first_line(error)}): start it again later"
    return None


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
        "proxy": settings.discord_proxy,
    }
    if args.shards is None:
        return MemoryBot(**options)
    return ShardedMemoryBot(**options, shard_count=args.shards, shard_ids=args.shard_ids)


async def run_bot(token: str, bot: MemoryBot) -> None:
    """Runs ``bot`` until a signal or until it stops; raises ``StartError`` when it could not connect or was refused
    (after closing memory: its queue flushed, its indexes saved)."""
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
        try:
            if runner in done:
                runner.result()  # surfaces a login failure such as a bad token
            else:
                await runner
        except Exception as error:
            line = connect_failure(error, bot.http.proxy)
            if line is None:
                raise
            raise StartError(line) from error


def set_up_logging(level: int) -> None:
    """discord.py's handler on the root logger; off a terminal (journald, a file) without colour codes, which
    discord.py prints wherever it guesses Docker."""
    if is_terminal():
        discord.utils.setup_logging(level=level)
    else:
        discord.utils.setup_logging(level=level, formatter=plain_formatter())


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
    set_up_logging(chosen_level(settings.log_level, args.verbose, args.quiet))
    route_library_logs()
    quiet_libraries(settings.logger_levels)
    warn_unknown_variables(ENV_FILE)
    tune_interpreter()
    bot = create_bot(args, settings)
    try:
        asyncio.run(run_bot(settings.discord_token.get_secret_value().strip(), bot))
    except StartError as error:
        log.debug("The bot could not run", exc_info=error.__cause__)  # the traceback, at -v
        print(f"error: {redacted_text(str(error))}", file=sys.stderr)  # an error's words may hold a URL's password
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
