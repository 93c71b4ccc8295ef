"""Who and where by name: ``@name`` and ``#channel`` as a command line takes them beside ids, resolved within one
guild against memory (members by the name on their newest message, channels by the name last seen), refused with
the candidates when no one or more than one answers to it."""

from __future__ import annotations

import argparse
import difflib
from typing import TYPE_CHECKING, TextIO

from ..runtime.safe_text import terminal_text
from .options import discord_id

if TYPE_CHECKING:
    from ..memory import Memory

# How many near names a refusal lists.
SHOWN_CANDIDATES = 5


def member_or_name(value: str) -> int | str:
    """A user id, or ``@name`` (kept as the name, resolved once memory is open)."""
    return _id_or_name(value, "@", "a user id")


def channel_or_name(value: str) -> int | str:
    """A channel id, or ``#name`` (kept as the name, resolved once memory is open)."""
    return _id_or_name(value, "#", "a channel id")


def _id_or_name(value: str, sign: str, what: str) -> int | str:
    if value.startswith(sign):
        if not value[1:].strip():
            raise argparse.ArgumentTypeError(f"needs a name after {sign} (or {what})")
        return value[1:].strip()
    try:
        return discord_id(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be {what} (a number) or {sign}name; you gave {value[:40]!r}") from None


def _matches(wanted: str, names: dict[int, str]) -> list[int]:
    folded = wanted.casefold()
    return [key for key, name in names.items() if name.casefold() == folded]


def _refusal(kind: str, sign: str, wanted: str, guild_id: int, names: dict[int, str], matches: list[int],
             listing: str) -> str:
    if matches:
        shown = ", ".join(f"{sign}{terminal_text(names[key])} (id {key})" for key in matches[:SHOWN_CANDIDATES])
        return (f"error: {sign}{terminal_text(wanted)} names {len(matches)} {kind}s in guild {guild_id}: {shown}; "
                f"pass the id")
    close = difflib.get_close_matches(wanted.casefold(), [name.casefold() for name in names.values()],
                                      n=SHOWN_CANDIDATES, cutoff=0.5)
    near = [f"{sign}{terminal_text(name)} (id {key})" for key, name in names.items() if name.casefold() in close]
    hint = f"; near: {', '.join(near[:SHOWN_CANDIDATES])}" if near else ""
    return f"error: no {kind} {sign}{terminal_text(wanted)} in guild {guild_id}'s memory{hint} ({listing})"


async def member_id(memory: Memory, guild_id: int, given: int | str, err: TextIO) -> int | None:
    """``given``'s user id: the id itself, or the one member of the guild memory knows by that name; None after
    one ``error:`` line naming the candidates."""
    if isinstance(given, int):
        return given
    names = {author.author_id: author.name for author in await memory.authors(guild_id)}
    return _resolved("member", "@", given, guild_id, names, err)


async def channel_id(memory: Memory, guild_id: int, given: int | str, err: TextIO) -> int | None:
    """``given``'s channel id: the id itself, or the one channel (or thread) of the guild by that name."""
    if isinstance(given, int):
        return given
    return _resolved("channel", "#", given, guild_id, memory.names.channel_names(guild_id), err)


def _resolved(kind: str, sign: str, wanted: str, guild_id: int, names: dict[int, str], err: TextIO) -> int | None:
    matches = _matches(wanted, names)
    if len(matches) == 1:
        return matches[0]
    print(_refusal(kind, sign, wanted, guild_id, names, matches, f"`{kind}s --guild {guild_id}` lists them"),
          file=err)
    return None
