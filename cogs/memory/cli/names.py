"""Who and where by name: ``@name`` and ``#channel`` as a command line takes them beside ids and mentions, resolved
within one guild by the core (``cogs.memory.names``: members by every name they wrote under, channels by the name
last seen), and its refusal worded for a terminal, with the candidates, when no one or more than one answers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from ..names import (Ambiguous, Candidate, NotFound, Resolution, Resolved, Sign, channels, members, mentioned_id,
                     resolve)
from ..runtime.safe_text import terminal_text
from .options import discord_id

if TYPE_CHECKING:
    from ..memory import Memory

# How many candidates a refusal lists.
SHOWN_CANDIDATES = 5


def member_or_name(value: str) -> int | str:
    """A user id (or its mention, ``<@id>``), or ``@name`` (kept as the name, resolved once memory is open)."""
    return _id_or_name(value, "@", "a user id")


def channel_or_name(value: str) -> int | str:
    """A channel id (or its mention, ``<#id>``), or ``#name`` (kept as the name, resolved once memory is open)."""
    return _id_or_name(value, "#", "a channel id")


def _id_or_name(value: str, sign: Sign, what: str) -> int | str:
    mentioned = mentioned_id(value, sign)
    if mentioned is not None:
        return mentioned
    if value.startswith(sign):
        if not value[1:].strip():
            raise argparse.ArgumentTypeError(f"needs a name after {sign} (or {what})")
        return value[1:].strip()
    try:
        return discord_id(value)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be {what} (a number) or {sign}name; you gave {value[:40]!r}") from None


def _listed(sign: Sign, found: tuple[Candidate, ...]) -> str:
    return ", ".join(f"{sign}{terminal_text(candidate.name)} (id {candidate.id})"
                     for candidate in found[:SHOWN_CANDIDATES])


def _refusal(kind: str, sign: Sign, guild_id: int, refused: Ambiguous | NotFound) -> str:
    wanted = f"{sign}{terminal_text(refused.wanted)}"
    if isinstance(refused, Ambiguous):
        return (f"error: {wanted} names {len(refused.candidates)} {kind}s in guild {guild_id}: "
                f"{_listed(sign, refused.candidates)}; pass the id")
    hint = f"; near: {_listed(sign, refused.near)}" if refused.near else ""
    return f"error: no {kind} {wanted} in guild {guild_id}'s memory{hint} (`{kind}s --guild {guild_id}` lists them)"


async def member_id(memory: Memory, guild_id: int, given: int | str, err: TextIO) -> int | None:
    """``given``'s user id: the id itself, or the one member of the guild who wrote under that name; None after
    one ``error:`` line naming the candidates."""
    if isinstance(given, int):
        return given
    found = resolve(given, members(await memory.store.author_names(guild_id)), "@")
    return _resolved("member", "@", guild_id, found, err)


async def channel_id(memory: Memory, guild_id: int, given: int | str, err: TextIO) -> int | None:
    """``given``'s channel id: the id itself, or the one channel (or thread) of the guild by that name."""
    if isinstance(given, int):
        return given
    found = resolve(given, channels(memory.names.channel_names(guild_id)), "#")
    return _resolved("channel", "#", guild_id, found, err)


def _resolved(kind: str, sign: Sign, guild_id: int, found: Resolution, err: TextIO) -> int | None:
    if isinstance(found, Resolved):
        return found.id
    print(_refusal(kind, sign, guild_id, found), file=err)
    return None
