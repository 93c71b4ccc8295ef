"""``export``: a subject access request from the terminal: everything memory holds of one member in one guild, written
as the member's /memory export is (the same schema, JSON and a web page, zipped, in parts), into a folder the host
then hands to the member. The terminal knows no Discord permissions, so every channel holding the member's messages
is included and named as memory last saw it: read the files before handing them over."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ..privacy.member_export import DISCORD_DEFAULT_LIMIT, ExportRequest, write_member_export
from ..privacy.subject_access import Readable
from .options import OK, USAGE, Terminal, chosen_guild, discord_id

if TYPE_CHECKING:
    from ..memory import Memory

MIB = 2**20


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    export = commands.add_parser("export", parents=[parent], help="everything memory holds of one member in a guild "
                                 "(a subject access request), as /memory export writes it",
                                 description="Write everything memory holds of one member in one guild (their "
                                             "messages, opt-out, the quotation log of their messages) into OUT, as "
                                             "zipped JSON and HTML parts (docs/privacy.md). Every channel is "
                                             "included and named: the terminal knows no Discord permissions.")
    export.add_argument("--guild", type=discord_id, required=True, help="the guild id")
    export.add_argument("--member", type=discord_id, required=True, help="the member's user id")
    export.add_argument("--part-mib", type=int, default=DISCORD_DEFAULT_LIMIT // MIB,
                        help="largest part, in MiB (default: %(default)s, Discord's attachment limit)")
    export.add_argument("out", type=Path, metavar="OUT", help="the folder to write the export's folder into")
    export.set_defaults(handler=export_member, memory="read")


async def export_member(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    if await chosen_guild(memory, args.guild, term.err) is None:
        return USAGE
    if args.part_mib < 1:
        print("error: --part-mib must be 1 or more", file=term.err)
        return USAGE
    request = ExportRequest(args.guild, memory.names.guild_name(args.guild) or str(args.guild), args.member,
                            Readable(everything=True), memory.names.channel_names(args.guild),
                            await memory.is_opted_out(args.guild, args.member))
    result = await write_member_export(memory.subject_access, request, args.out, part_limit=args.part_mib * MIB)
    if result.holds_nothing:
        print(f"memory holds nothing of member {args.member} in guild {args.guild}; nothing written", file=term.out)
        return OK
    for part in result.parts:
        print(part, file=term.out)
    print(f"exported {result.messages} messages and {result.quotations} quotation notes in {len(result.parts)} "
          f"part(s)", file=term.out)
    return OK
