"""What memory holds: ``stats`` (per guild, with the profile and reranker), ``guilds``, ``channels`` and ``members``,
by name and id. Memory learns a name when the bot sees the guild or channel (or an import names it); until then, the id alone."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..runtime.safe_text import terminal_text
from .options import OK, USAGE, Terminal, chosen_guild, discord_id, guild_label, utc_text

if TYPE_CHECKING:
    from ..memory import Memory
    from ..records import ChannelActivity

NAME_UNKNOWN = "name unknown"
NAMES_UNKNOWN = ("some names are unknown: memory learns a guild's or channel's name when the bot sees it (or an "
                 "import names it); Discord shows ids with Developer Mode: right-click a server or channel, Copy ID")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    stats = commands.add_parser("stats", parents=[parent], help="per guild: messages, vectors pending, channels, "
                                "last message; the profile and reranker", description="What memory holds per guild, "
                                "and the profile and reranker it runs with. Loads no reranker.")
    stats.add_argument("--guild", type=discord_id, help="only this guild id (default: every guild)")
    stats.set_defaults(handler=show_stats, memory="light")
    guilds = commands.add_parser("guilds", parents=[parent],
                                 help="the guilds in memory (names and ids), with their messages",
                                 description="Every guild memory holds messages of, by id and name.")
    guilds.set_defaults(handler=list_guilds, memory="light")
    channels = commands.add_parser("channels", parents=[parent], help="one guild's channels in memory (names and ids)",
                                   description="Every channel (and thread) of a guild memory holds messages of, by "
                                               "id and name.")
    channels.add_argument("--guild", type=discord_id, help="guild id (default: the only guild in memory)")
    channels.set_defaults(handler=list_channels, memory="light")
    members = commands.add_parser("members", parents=[parent],
                                  help="one guild's authors in memory: ids, names as last seen, message counts",
                                  description="Every author of a guild's messages in memory, most messages first: the "
                                              "user id (what forget --member takes), the name on their newest "
                                              "message, how many messages and the last one's time.")
    members.add_argument("--guild", type=discord_id, help="guild id (default: the only guild in memory)")
    members.set_defaults(handler=list_members, memory="light")


def last_text(activity: list[ChannelActivity]) -> str:
    times = [channel.last_message_at for channel in activity if channel.last_message_at is not None]
    return utc_text(max(times)) if times else "none"


def reranker_text(memory: Memory) -> str:
    from ..runtime.profile import reranks

    settings = memory.profile.reranker
    if not reranks(memory.profile):
        return "off in this profile (recall keeps the first-stage order)"
    return (f"{settings.model} ({settings.provider}, {settings.backend}); not loaded by this command: the bot loads "
            "it at start, search and ask here when they rerank")


async def show_stats(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    guilds = await memory.guild_ids()
    if args.guild is not None:
        if await chosen_guild(memory, args.guild, term.err) is None:
            return USAGE
        guilds = [args.guild]
    print(f"profile: {memory.profile.name}; embedding model: {memory.embedder.display_name}", file=term.out)
    print(f"reranker: {reranker_text(memory)}", file=term.out)
    print(f"vectors pending: {await memory.vectors_pending()} (every guild)", file=term.out)
    if not guilds:
        print("no guilds in memory yet: import an export or run the bot", file=term.out)
    for guild_id in guilds:
        stats = await memory.stats(guild_id)
        activity = await memory.channel_activity(guild_id)
        pending = max(stats.messages - stats.index.vectors, 0)
        print(f"guild {guild_label(memory, guild_id)}: {stats.messages} messages, {stats.index.vectors} vectors "
              f"({pending} pending), {len(activity)} channels, last message {last_text(activity)}, vector index "
              f"{stats.index.kind} {stats.index.file_bytes / 1e6:.1f} MB on disk", file=term.out)
    return OK


async def list_guilds(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    guilds = await memory.guild_ids()
    if not guilds:
        print("no guilds in memory yet: import an export or run the bot", file=term.out)
        return OK
    for guild_id in guilds:
        activity = await memory.channel_activity(guild_id)
        name = memory.names.guild_name(guild_id)
        print(f"{guild_id}  {NAME_UNKNOWN if name is None else terminal_text(name)}  "
              f"{(await memory.stats(guild_id)).messages} messages in {len(activity)} channels, "
              f"last {last_text(activity)}", file=term.out)
    if any(memory.names.guild_name(guild_id) is None for guild_id in guilds):
        print(NAMES_UNKNOWN, file=term.err)
    return OK


def channel_text(names: dict[int, str], parents: dict[int, int | None], channel_id: int) -> str:
    """``#general``, ``#raffle (thread in #general)``, or ``name unknown``."""
    name = names.get(channel_id)
    if name is None:
        return NAME_UNKNOWN
    parent = parents.get(channel_id)
    if parent is None:
        return f"#{terminal_text(name)}"
    return f"#{terminal_text(name)} (thread in #{terminal_text(names.get(parent, str(parent)))})"


async def list_channels(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    guild_id = await chosen_guild(memory, args.guild, term.err)
    if guild_id is None:
        return USAGE
    names = memory.names.channel_names(guild_id)
    activity = await memory.channel_activity(guild_id)
    parents = {channel.channel_id: memory.names.channel_parent(guild_id, channel.channel_id) for channel in activity}
    for channel in activity:
        last = "none" if channel.last_message_at is None else utc_text(channel.last_message_at)
        print(f"{channel.channel_id}  {channel_text(names, parents, channel.channel_id)}  {channel.messages} messages "
              f"(its threads' included), last {last}", file=term.out)
    if any(channel.channel_id not in names for channel in activity):
        print(NAMES_UNKNOWN, file=term.err)
    return OK


async def list_members(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    guild_id = await chosen_guild(memory, args.guild, term.err)
    if guild_id is None:
        return USAGE
    for author in await memory.authors(guild_id):
        noun = "message" if author.messages == 1 else "messages"
        print(f"{author.author_id}  {terminal_text(author.name)}  {author.messages} {noun}, last "
              f"{utc_text(author.last_at)}", file=term.out)
    return OK
