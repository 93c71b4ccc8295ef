"""``dashboard-link``: a one-time sign-in link to the running bot's web dashboard, from a terminal.

The terminal's root (``cogs/memory/__main__.py``) adds it beside the CLI's own commands; it needs no memory and
no model, only the settings and the folder the running bot reads its tokens from.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from pathlib import Path

from . import standalone
from .standalone import Streams
from .auth import LoginTokens
from .config import PORT_ENV, DashboardConfig

__all__ = ("dashboard_link", "issue_link", "listening", "register")

# The terminal's exit codes (cogs/memory/cli/options.py): 0 it worked, 1 it failed.
OK, FAILED = 0, 1
PROBE_TIMEOUT_S = 2.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    standalone.register(commands, parent)
    link = commands.add_parser("dashboard-link", parents=[parent],
                               help="print a one-time sign-in link to the running dashboard, the bot's or "
                                    "`dashboard`'s (exit code 1 when none is configured or nothing listens)",
                               description="Print a one-time sign-in link to the running web dashboard: the bot's "
                                           "(MEMORY_DASHBOARD_PORT), or the one `dashboard` serves (give it the same "
                                           "--data and --port).")
    link.add_argument("--data", type=Path, metavar="DIR", help="the data folder the dashboard serves (as given to "
                                                               "`dashboard --data`)")
    link.add_argument("--port", type=standalone.port_number,
                      help="the port the dashboard listens on (default: MEMORY_DASHBOARD_PORT)")
    link.set_defaults(handler=dashboard_link, memory=None)


async def dashboard_link(args: argparse.Namespace, term: Streams) -> int:
    return await asyncio.to_thread(issue_link, args, term)


def issue_link(args: argparse.Namespace, term: Streams) -> int:
    """A fresh one-time sign-in link: written (hashed) where the running bot's dashboard reads it, beside the
    database. The settings come from the environment and the bot's .env, as the bot reads them."""
    standalone.apply_data_dir(args)
    port = getattr(args, "port", None)
    config = DashboardConfig.from_settings(args.db.parent, args.settings) if port is None \
        else standalone.config_for(args)
    if config is None:
        print(f"error: the dashboard is off: set {PORT_ENV} (in .env or the environment) and restart the bot, or "
              "run `discord-memory dashboard` and give its --port here", file=term.err)
        return FAILED
    if not listening(config):
        print(f"error: nothing is listening on {config.probe_address()[0]}:{config.port}: start the bot (with "
              f"{PORT_ENV} set) or `discord-memory dashboard --port {config.port}`, then ask again", file=term.err)
        return FAILED
    try:
        token = LoginTokens(config.token_dir, config.login_ttl_s).issue()
    except OSError as error:
        print(f"error: could not write the sign-in token under {config.token_dir}: {error.strerror}", file=term.err)
        return FAILED
    print(config.login_link(token), file=term.out)
    print(f"valid once, for {config.login_ttl_s / 60:.0f} minutes, while the dashboard runs", file=term.err)
    return OK


def listening(config: DashboardConfig) -> bool:
    """Whether something accepts connections where the dashboard binds (a link to a dead port helps nobody)."""
    try:
        with socket.create_connection(config.probe_address(), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False
