"""What every command shares: the option types (argparse turns their errors into one line and exit code 2), the
options any command accepts before or after its name, the profile choice, and how times and guilds are shown."""

from __future__ import annotations

import argparse
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..records import MAX_QUERY_CHARS, MAX_RESULTS
from ..runtime.config import DB_PATH, INDEX_DIR, PROFILE_CHOICE_PATH, PROFILES_DIR, postgres_url_problem
from ..runtime.safe_text import shown_value, terminal_text

if TYPE_CHECKING:
    from ..memory import Memory
    from ..runtime.profile import MemoryProfile

log = logging.getLogger(__name__)

# SQLite holds signed 64-bit integers, and no Discord id (a snowflake) reaches 2**63.
SNOWFLAKE_END = 2**63
# Exit codes, as --help and the README state them.
OK, FAILED, USAGE = 0, 1, 2
# A whole number as typed: ASCII digits, maybe a minus sign. int() alone also takes other scripts' digits ("٣" is 3),
# full-width ones, "+5", "1_000" and spaces around.
_WHOLE_NUMBER = re.compile(r"-?[0-9]+")


@dataclass(frozen=True, slots=True)
class Terminal:
    """Where a command writes its results (``out``), its errors and progress (``err``), and reads a confirmation."""

    out: TextIO
    err: TextIO
    stdin: TextIO


def query_text(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("is blank; give some words to search for")
    if len(value) > MAX_QUERY_CHARS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_QUERY_CHARS} characters; you gave {len(value)}")
    return value


def whole_number(value: str) -> int:
    try:
        if _WHOLE_NUMBER.fullmatch(value):
            return int(value)
    except ValueError:  # more digits than int() reads (4,300)
        pass
    raise argparse.ArgumentTypeError(f"must be a whole number in digits 0-9; you gave {value[:40]!r}")


def result_limit(value: str) -> int:
    number = whole_number(value)
    if not 1 <= number <= MAX_RESULTS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_RESULTS}; you gave {number}")
    return number


def discord_id(value: str) -> int:
    number = whole_number(value)
    if not 0 < number < SNOWFLAKE_END:
        raise argparse.ArgumentTypeError(f"must be a Discord id (a positive whole number); you gave {number}")
    return number


def utc_time(value: str) -> datetime:
    """A date (2024-05-01) or date and time (2024-05-01T12:30, 2024-05-01 12:30); UTC unless it names a zone."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a date like 2024-05-01 or 2024-05-01T12:30 (UTC); you gave "
                                         f"{value!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def postgres_url(value: str) -> str:
    """A URL asyncpg reads (DATABASE_URL's rule); the error shows it without its password."""
    problem = postgres_url_problem(value.strip())
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{problem}; you gave {shown_value(value, credentials=True)}")
    return value.strip()


def add_memory_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """``--db``, ``--index-dir``, ``--profile`` and ``-v``/``-q``: on the top-level parser with their defaults, and on every
    subcommand (through ``parents``) with none, so that a value given after the command is kept and one given
    before it is not overwritten by the subcommand's default."""
    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--db", type=Path, default=default(DB_PATH), help=f"SQLite file (default: {DB_PATH})")
    parser.add_argument("--index-dir", type=Path, default=default(INDEX_DIR),
                        help=f"FAISS index folder (default: {INDEX_DIR})")
    parser.add_argument("--profile", default=default(None),
                        help="profile name or .toml path (default: the bot's saved choice or the hardware's)")
    parser.add_argument("-v", "--verbose", action="count", default=default(0),
                        help="log one level more per -v (from LOG_LEVEL, else WARNING): -v INFO, -vv DEBUG")
    parser.add_argument("-q", "--quiet", action="count", default=default(0), help="log errors only")


def shared_options() -> argparse.ArgumentParser:
    """The parent parser every subcommand takes its shared options from."""
    parent = argparse.ArgumentParser(add_help=False)
    add_memory_options(parent, defaults=False)
    return parent


def load_profile_for(args: argparse.Namespace) -> MemoryProfile:
    """``--profile``, else the bot's saved choice, else ``MEMORY_PROFILE`` (the settings) or the hardware's."""
    from ..runtime.profile import load_profile
    from ..runtime.profile_choice import saved_or_selected_profile

    if args.profile:
        return load_profile(args.profile)
    # The bot's saved choice sits beside its database.
    settings = getattr(args, "settings", None)
    return saved_or_selected_profile(args.db.parent / PROFILE_CHOICE_PATH.name, PROFILES_DIR,
                                     settings.memory_profile if settings is not None else None)


def utc_text(moment: datetime | float | str) -> str:
    """A stored time as every command prints it: minutes, marked UTC."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    elif isinstance(moment, float | int):
        moment = datetime.fromtimestamp(moment, UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def guild_label(memory: Memory, guild_id: int) -> str:
    """``1 (Picnic Club)``, or the id alone when memory has not seen the guild's name."""
    name = memory.names.guild_name(guild_id)
    return str(guild_id) if name is None else f"{guild_id} ({terminal_text(name)})"


def channel_label(names: dict[int, str], channel_id: int) -> str:
    """``#general``, or ``#20`` when memory has not seen the channel's name (``names``: PlaceNames.channel_names)."""
    name = names.get(channel_id)
    return f"#{channel_id}" if name is None else f"#{terminal_text(name)}"


def guilds_text(memory: Memory, guilds: list[int]) -> str:
    return ", ".join(guild_label(memory, guild_id) for guild_id in guilds) or "none yet"


async def chosen_guild(memory: Memory, guild_id: int | None, err: TextIO) -> int | None:
    """``guild_id`` when memory holds it, or the only guild memory holds when it is None; else None, after one
    ``error:`` line saying which guilds there are (the command then exits 2)."""
    guilds = await memory.guild_ids()
    if guild_id is None:
        if len(guilds) == 1:
            return guilds[0]
        print(f"error: pass --guild (guilds in memory: {guilds_text(memory, guilds)})", file=err)
        return None
    if guild_id not in guilds:
        print(f"error: guild {guild_id} is not in memory (guilds in memory: {guilds_text(memory, guilds)})",
              file=err)
        return None
    return guild_id


def print_backlog(waiting: int, err: TextIO) -> None:
    """A read-only command leaves the vector backlog alone (the bot or the next start embeds it): it says so."""
    if waiting:
        print(f"{waiting} stored messages wait for their vectors: found by their words now, by their meaning once "
              "the bot (or the next import) has embedded them", file=err)
