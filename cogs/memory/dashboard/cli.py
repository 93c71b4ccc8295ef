"""``dashboard-link``: a one-time sign-in link to the running bot's web dashboard, from a terminal.

The terminal's root (``cogs/memory/__main__.py``) adds it beside the CLI's own commands; it needs no memory and
no model, only the settings and the folder the running bot reads its tokens from.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Protocol, TextIO

from .auth import LoginTokens
from .config import PORT_ENV, DashboardConfig

__all__ = ("dashboard_link", "issue_link", "register")

# The terminal's exit codes (cogs/memory/cli/options.py): 0 it worked, 1 it failed.
OK, FAILED = 0, 1


class Streams(Protocol):
    """Where a command writes: the terminal's ``Terminal`` (cogs/memory/cli/options.py)."""

    @property
    def out(self) -> TextIO: ...

    @property
    def err(self) -> TextIO: ...


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    link = commands.add_parser("dashboard-link", parents=[parent],
                               help="print a one-time sign-in link to the running bot's web dashboard (exit code 1 "
                                    "when the dashboard is not configured)",
                               description="Print a one-time sign-in link to the running bot's web dashboard.")
    link.set_defaults(handler=dashboard_link, memory=None)


async def dashboard_link(args: argparse.Namespace, term: Streams) -> int:
    return await asyncio.to_thread(issue_link, args, term)


def issue_link(args: argparse.Namespace, term: Streams) -> int:
    """A fresh one-time sign-in link: written (hashed) where the running bot's dashboard reads it, beside the
    database. The settings come from the environment and the bot's .env, as the bot reads them."""
    config = DashboardConfig.from_settings(args.db.parent, args.settings)
    if config is None:
        print(f"error: the dashboard is off: set {PORT_ENV} (in .env or the environment) and restart the bot",
              file=term.err)
        return FAILED
    try:
        token = LoginTokens(config.token_dir, config.login_ttl_s).issue()
    except OSError as error:
        print(f"error: could not write the sign-in token under {config.token_dir}: {error.strerror}", file=term.err)
        return FAILED
    print(config.login_link(token), file=term.out)
    print(f"valid once, for {config.login_ttl_s / 60:.0f} minutes, while the bot runs", file=term.err)
    return OK
