"""Memory from a terminal (``python -m cogs.memory``, ``discord-memory``): one module per command group, each adding
its subcommands to ``build_parser()``'s parser and naming its handler and whether it opens memory. The terminal's
root (``cogs/memory/__main__.py``) adds the groups of the parts beside it (the dashboard's ``dashboard-link``).

May import: the ``Memory`` facade and the core below it; never ``discord`` (``ask`` reuses the cog's Discord-free
LLM client), nor the dashboard.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TextIO

from ..runtime.config import (ENV_FILE, Settings, SettingsError, export_library_variables, load_settings,
                              warn_unknown_variables)
from ..runtime.logs import chosen_level, quiet_libraries, route_library_logs
from ..runtime.safe_text import redacted_text
from ..store.protocol import DatabaseUnavailableError
from ..store.sqlite.integrity import explain_open_failure
from . import database, export, forget, ingest, overview, recall
from .options import FAILED, USAGE, Terminal, add_memory_options, load_profile_for, shared_options

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("build_parser", "parse_args", "run", "main", "version")

log = logging.getLogger(__name__)

PROG = "python -m cogs.memory"
DESCRIPTION = ("Memory from a terminal: import DiscordChatExporter JSON, search and ask what the bot would recall, "
               "see and forget what it holds, back up and restore.")
EXIT_STATUS = ("exit status: 0 it worked; 1 something failed (an import, damage found, an LLM answer, a backup "
               "refused); 2 usage error (a bad option, an unknown or missing --guild, forget without --yes off a "
               "terminal); 130 an import stopped by Ctrl-C (what it read is stored).")
EPILOG = ("options such as --db may come before or after the command; `COMMAND --help` lists a command's own.\n"
          + EXIT_STATUS.replace("refused); ", "refused);\n").replace("terminal); ", "terminal);\n"))


class CommandGroup(Protocol):
    """A module that adds its subcommands to the parser (each of this package's modules, and the dashboard's cli)."""

    def register(self, commands: argparse._SubParsersAction[argparse.ArgumentParser],
                 parent: argparse.ArgumentParser) -> None: ...


# The command groups, in the order --help lists them; the root's own groups follow.
GROUPS: tuple[CommandGroup, ...] = (ingest, recall, overview, forget, export, database)
# Loggers whose warnings a command says itself, in its error line (a write that failed, a lost PostgreSQL): below
# -v, a terminal shows one line per event. The bot's log keeps them.
SAID_BY_THE_COMMAND = ("cogs.memory.ingest.writer", "cogs.memory.store.postgres.faults")


def version() -> str:
    """The installed package's version; from a checkout that is not installed, pyproject.toml's."""
    from importlib import metadata

    try:
        return metadata.version("discord-memory-bot")
    except metadata.PackageNotFoundError:
        import tomllib

        from ..runtime.config import ROOT

        with open(ROOT / "pyproject.toml", "rb") as file:
            return str(tomllib.load(file)["project"]["version"])


def build_parser(groups: Sequence[CommandGroup] = ()) -> argparse.ArgumentParser:
    """The whole command line: top-level options, then one subcommand per command a group registers (this package's
    groups, then ``groups``)."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    add_memory_options(parser, defaults=True)
    parent = shared_options()
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (*GROUPS, *groups):
        group.register(commands, parent)
    for command in commands.choices.values():
        command.epilog = EXIT_STATUS
    return parser


def parse_args(argv: Sequence[str] | None, groups: Sequence[CommandGroup] = ()) -> argparse.Namespace:
    return build_parser(groups).parse_args(argv)


async def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr,
              stdin: TextIO | None = None, settings: Settings | None = None) -> int:
    """Runs one command; ``settings`` default to the environment's and .env's (``main`` passes them validated)."""
    term = Terminal(out, err, sys.stdin if stdin is None else stdin)
    args.settings = settings if settings is not None else load_settings(env_file=ENV_FILE)
    if args.memory is None:  # these read the files or another server only: no profile, no models
        code: int = await args.handler(args, term)
        return code
    refusal = getattr(args, "refuse", None)  # what a command refuses before memory (and its model) opens
    if refusal is not None and (refused := refusal(args, term)) is not None:
        return int(refused)
    return await with_memory(args, term)


async def with_memory(args: argparse.Namespace, term: Terminal) -> int:
    from ..memory import Memory, MemoryOpenError
    from ..runtime.profile import ProfileError

    try:
        profile = await asyncio.to_thread(load_profile_for, args)
    except ProfileError as error:  # MEMORY_PROFILE's value is in it: shown without what may be a password
        print(f"error: {redacted_text(str(error))}", file=term.err)
        return USAGE
    try:
        # Only an import embeds: a read-only command leaves the vector backlog to the bot or the next start.
        # No command loads the reranker as memory opens: search and ask load it when they rerank. A light command
        # ("light": stats, forget...) loads no model and no vector index (a forget loads the index it changes).
        memory = await Memory.open(profile, args.db, args.index_dir, args.settings.database,
                                   embed_backlog=args.memory == "write", reranker=False,
                                   load_models=args.memory != "light")
    except MemoryOpenError as error:
        print(f"error: {redacted_text(str(error))}", file=term.err)
        return FAILED
    try:
        code = await args.handler(memory, args, term)
    except sqlite3.DatabaseError as error:  # e.g. damage found mid-run: say what to do, not a traceback
        print(f"error: {explain_open_failure(args.db, error)}", file=term.err)
        code = FAILED
    except DatabaseUnavailableError as error:  # PostgreSQL went away mid-run
        print(f"error: {error}", file=term.err)
        code = FAILED
    finally:
        closed = await close(memory, term.err)
    return code if closed else FAILED


async def close(memory: Memory, err: TextIO) -> bool:
    """Close memory; a failure (everything is closed anyway) is one line on ``err``."""
    try:
        await memory.close()
    except Exception as error:
        log.debug("Closing memory failed", exc_info=True)
        print(f"error: memory did not close cleanly: {error}", file=err)
        return False
    return True


def main(argv: Sequence[str] | None = None, groups: Sequence[CommandGroup] = ()) -> int:
    args = parse_args(argv, groups)
    try:  # the bot's settings, from the environment and its .env (a variable in the environment wins)
        settings = load_settings(env_file=ENV_FILE)
    except SettingsError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        return USAGE
    export_library_variables(ENV_FILE)
    level = chosen_level(settings.log_level, args.verbose or 0, args.quiet or 0, default=logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if level >= logging.WARNING:
        for name in SAID_BY_THE_COMMAND:
            logging.getLogger(name).setLevel(logging.ERROR)
    route_library_logs()
    quiet_libraries(settings.logger_levels)
    warn_unknown_variables(ENV_FILE)
    return asyncio.run(run(args, sys.stdout, sys.stderr, settings=settings))
