"""``forget``: erase a member's, a channel's, one message's or a whole guild's messages, through the same Memory calls
as the slash commands (the erasure ledger first, so no restore brings them back), then wait for the purge that
removes the text from every file before saying it is done."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..privacy.ledger import ErasureNotRecorded
from .names import channel_id, channel_or_name, member_id, member_or_name
from .options import FAILED, OK, USAGE, Terminal, chosen_guild, discord_id

if TYPE_CHECKING:
    from ..memory import Memory


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    forget = commands.add_parser("forget", parents=[parent], help="erase a member's, a channel's, a message's or a "
                                 "guild's messages (as /memory forget does)",
                                 description="Erase messages from memory and from its files, as /memory forget "
                                             "does; recorded in the erasure ledger, so a restore does not bring them "
                                             "back. Asks for confirmation unless --yes.")
    forget.add_argument("--guild", type=discord_id, required=True, help="the guild id")
    what = forget.add_mutually_exclusive_group(required=True)
    what.add_argument("--member", type=member_or_name, metavar="ID|@NAME",
                      help="every message of this member (user id, <@id>, or @name under any name memory saw)")
    what.add_argument("--channel", type=channel_or_name, metavar="ID|#NAME",
                      help="every message in this channel and its threads (channel id, <#id>, or #name)")
    what.add_argument("--message", type=discord_id, metavar="ID", help="this one message")
    what.add_argument("--all", action="store_true", help="every message of the guild")
    forget.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    forget.set_defaults(handler=forget_messages, memory="light", refuse=unconfirmable)


def plan(memory: Memory, args: argparse.Namespace) -> tuple[str, Callable[[], Awaitable[int]]]:
    """What will be forgotten, in words, and the Memory call the slash command makes for it."""
    guild = args.guild
    if args.member is not None:
        return f"messages of member {args.member} in guild {guild}", lambda: memory.forget_author(guild, args.member)
    if args.channel is not None:
        return (f"messages in channel {args.channel} (and its threads) of guild {guild}",
                lambda: memory.forget_channel(guild, args.channel))
    if args.message is not None:
        return f"message {args.message} in guild {guild}", lambda: memory.forget_message(guild, args.message)
    return f"messages of guild {guild} (everything memory holds of it)", lambda: memory.forget_guild(guild)


def unconfirmable(args: argparse.Namespace, term: Terminal) -> int | None:
    """USAGE, after one line, when nobody can answer the confirmation: no --yes and stdin is not a terminal."""
    if args.yes or term.stdin.isatty():
        return None
    print("error: forget asks for confirmation and stdin is not a terminal: add --yes", file=term.err)
    return USAGE


async def confirmed(what: str, term: Terminal) -> bool:
    term.err.write(f"forget all {what}? This cannot be undone. [y/N] ")
    term.err.flush()
    answer = await asyncio.to_thread(term.stdin.readline)
    return answer.strip().lower() in ("y", "yes")


async def forget_messages(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    if await chosen_guild(memory, args.guild, term.err) is None:
        return USAGE
    # @name and #name become ids here, within the guild (refused, with the candidates, unless one answers).
    if args.member is not None:
        args.member = await member_id(memory, args.guild, args.member, term.err)
        if args.member is None:
            return USAGE
    if args.channel is not None:
        args.channel = await channel_id(memory, args.guild, args.channel, term.err)
        if args.channel is None:
            return USAGE
    if args.message is not None:
        stored = await memory.store.message(args.message)
        if stored is None or stored.guild_id != args.guild:
            print(f"error: message {args.message} is not in memory for guild {args.guild}; nothing to forget",
                  file=term.err)
            return FAILED
    what, action = plan(memory, args)
    if not args.yes and not await confirmed(what, term):
        print("nothing forgotten", file=term.out)
        return OK
    try:
        count = await action()
    except ErasureNotRecorded as error:  # the ledger first: when it cannot be written, nothing was forgotten
        print(f"error: nothing forgotten: {error}; free some space (or make it writable), then run this again",
              file=term.err)
        return FAILED
    if not await memory.purge():  # "forgot" means gone from the files too, not only from search
        print("the forgotten text is still in the database's write-ahead log (a long read held it); memory erases "
              "it as it closes", file=term.err)
    noun = "message" if count == 1 else "messages"
    if args.message is not None:
        print(f"forgot {what}" if count else f"forgot nothing: {what} was already gone", file=term.out)
    elif args.all:
        print(f"forgot {count} {noun}: everything of guild {args.guild}", file=term.out)
    else:
        print(f"forgot {count} {noun}{what.removeprefix('messages')}", file=term.out)
    return OK
