"""``dashboard``: the web dashboard over the stored memory, without a bot and without Discord (``discord-memory
dashboard``), for looking, searching and forgetting before the bot is live or beside it.

The terminal opens memory as its other commands do (the database's shared lock, which a restore waits on; no vector
backlog embedded; the erasure ledger first on every forget); this serves the same app as the bot's dashboard over it:
the same sign-in links, sessions, CSRF and Host checks. With no Discord, names are the ones memory last saw and every
guild memory holds is shown to the signed-in admin, which the pages say.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from pydantic import SecretStr

from ..runtime.config import DB_PATH, INDEX_DIR, PROFILES_DIR, postgres_url_problem
from .config import DashboardConfig

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("DEFAULT_PORT", "Streams", "NOTICE", "apply_data_dir", "config_for", "port_number", "register", "serve_dashboard")

DEFAULT_PORT = 8765
OK, FAILED, USAGE = 0, 1, 2
NOTICE = ("Standalone dashboard (discord-memory dashboard): no Discord behind it, so no member's permissions apply. "
          "You see every guild memory holds, as the admin; guilds and channels carry the names memory last saw.")
NO_PROFILE_SWITCH = ("the standalone dashboard does not switch profiles (a running bot would keep the old one): use "
                     "/memory profile set, or --profile when starting it")


class Streams(Protocol):
    """Where a command writes: the terminal's ``Terminal`` (cogs/memory/cli/options.py)."""

    @property
    def out(self) -> TextIO: ...

    @property
    def err(self) -> TextIO: ...


def port_number(value: str) -> int:
    if not value.isascii() or not value.isdigit() or not 0 <= int(value) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535; you gave {value[:40]!r}")
    return int(value)


def _database_url(value: str) -> str:
    problem = postgres_url_problem(value.strip())
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{problem} (a postgresql:// URL)")
    return value.strip()


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    serve = commands.add_parser(
        "dashboard", parents=[parent],
        help="serve the web dashboard over the stored memory, without the bot (Ctrl-C stops it)",
        description="Serve the web dashboard over the stored memory without a bot or Discord: look, search and "
                    "forget before the bot runs or beside it. Prints a one-time sign-in link; dashboard-link "
                    "(with the same --data and --port) prints more.")
    source = serve.add_mutually_exclusive_group()
    source.add_argument("--data", type=Path, metavar="DIR",
                        help=f"the data folder holding {DB_PATH.name} and {INDEX_DIR.name}/ (default: "
                             f"{DB_PATH.parent})")
    source.add_argument("database_url", nargs="?", type=_database_url, metavar="DATABASE_URL",
                        help="a PostgreSQL memory instead (default: DATABASE_URL from the environment or .env)")
    serve.add_argument("--port", type=port_number, help=f"the port (default: MEMORY_DASHBOARD_PORT, else {DEFAULT_PORT})")
    serve.set_defaults(handler=serve_dashboard, memory="read", refuse=choose_sources)


def apply_data_dir(args: argparse.Namespace) -> None:
    """``--data DIR``: the database and the indexes in DIR, as they are in data/."""
    data: Path | None = getattr(args, "data", None)
    if data is not None:
        args.db, args.index_dir = data / DB_PATH.name, data / INDEX_DIR.name


def config_for(args: argparse.Namespace) -> DashboardConfig:
    """The dashboard's settings as the bot reads them, on ``--port`` (else its port, else ``DEFAULT_PORT``); the
    sign-in tokens beside the database, where ``dashboard-link`` (same --data) writes them."""
    settings = args.settings
    port = args.port if args.port is not None else settings.memory_dashboard_port or DEFAULT_PORT
    settings = settings.model_copy(update={"memory_dashboard_port": port})
    config = DashboardConfig.from_settings(args.db.parent, settings)
    assert config is not None  # a port is set
    return dataclasses.replace(config, port=port)


def choose_sources(args: argparse.Namespace, term: Streams) -> int | None:
    """Before memory opens: where it lives (``--data``, a DATABASE_URL) and the dashboard's settings."""
    apply_data_dir(args)
    if args.database_url is not None:
        args.settings = args.settings.model_copy(update={"database_url": SecretStr(args.database_url)})
    elif args.data is not None:  # the SQLite memory in DIR, whatever DATABASE_URL .env names
        args.settings = args.settings.model_copy(update={"database_url": None})
    if args.data is not None and not args.db.exists():
        print(f"error: {args.db} does not exist: --data names the folder holding {DB_PATH.name} (import exports "
              "first: discord-memory import ...)", file=term.err)
        return USAGE
    args.dashboard_config = config_for(args)
    return None


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM (systemd's stop) set ``stop``: the server closes, then memory, as after any command."""
    loop = asyncio.get_running_loop()
    installed = []
    for number in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(number, stop.set)
        except (RuntimeError, ValueError, NotImplementedError):  # not the main thread, or no signals here
            continue
        installed.append(number)
    try:
        yield
    finally:
        for number in installed:
            loop.remove_signal_handler(number)


async def serve_dashboard(memory: Memory, args: argparse.Namespace, term: Streams) -> int:
    from ..metrics import MetricsRecorder
    from .memory_source import MemorySource
    from .server import Dashboard

    config: DashboardConfig = args.dashboard_config
    recorder = MetricsRecorder()
    source = MemorySource(lambda: memory, profiles_dir=PROFILES_DIR, recorder=recorder,
                          profile_switch_refused=NO_PROFILE_SWITCH)
    dashboard = Dashboard(source, config, recorder, notice=NOTICE, history_origin="standalone")
    try:
        await dashboard.start()
    except OSError as error:
        print(f"error: the dashboard could not listen on {config.host}:{config.port} ({error.strerror}): is the "
              "bot's dashboard there? Give another --port", file=term.err)
        return FAILED
    print(dashboard.first_link, file=term.out, flush=True)
    data = f" --data {args.data}" if args.data is not None else ""
    print(f"Dashboard on {config.base_url(dashboard.port)}: the link above signs in once, within "
          f"{config.login_ttl_s / 60:.0f} minutes; `discord-memory dashboard-link{data} --port {dashboard.port}` "
          "prints another. Ctrl-C stops it.", file=term.err, flush=True)
    # Searches rerank once the reranker has loaded (a first use downloads it); until then, first-stage order.
    reranker = asyncio.create_task(memory.load_reranker(), name="dashboard-reranker-load")
    stop = asyncio.Event()
    try:
        with stop_on_signals(stop):
            await stop.wait()
    finally:
        reranker.cancel()
        await asyncio.gather(reranker, return_exceptions=True)
        await dashboard.stop()
    print("Dashboard stopped.", file=term.err)
    return OK

