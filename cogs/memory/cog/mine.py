"""``/memory mine``: what memory holds of the member who asks, shown to them alone: their messages per channel and
since when, whether they opted out, where their messages were quoted, their latest messages (each with a button that
forgets it through /memory forget's own checks), and a search over their own messages. Only channels they can read
now are shown; the others are counted."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from . import replies
from .forgetting import confirm_and_forget, message_plan
from .options import UserInputError, options_checked
from .permissions import NotGuildAdmin, command_member, readable_channel_ids, readable_thread_parent_ids
from .recall import format_memory_line, snippet
from .views import Paginator
from ..privacy.subject_access import MemberHoldings, Readable
from ..records import MAX_QUERY_CHARS, MAX_RESULTS, SearchFilters
from ..store.member_rows import MemberMessage, Quotation

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("MineCommands", "MinePages", "readable_now")

log = logging.getLogger(__name__)

PER_PAGE = 5
LATEST = 25  # the latest messages shown, five a page
QUOTES_SHOWN = 5
CHANNELS_SHOWN = 15
QUOTED_HOW = {"answer": "in a public answer", "auto": "in an automatic recall", "llm": "given to the AI for an answer",
              "search": "in someone's private search"}


def readable_now(member: discord.Member) -> Readable:
    """What the member can read now, as the core takes it."""
    channel_ids = readable_channel_ids(member)
    return Readable(channel_ids, readable_thread_parent_ids(member, channel_ids))


def _when(seconds: float, style: str = "R") -> str:
    return discord.utils.format_dt(datetime.fromtimestamp(seconds, UTC), style)  # type: ignore[arg-type]


def _quote_line(guild_id: int, quote: Quotation, readable: Readable) -> str:
    line = f"{_when(quote.quoted_at)}: your message in <#{quote.channel_id}>, {QUOTED_HOW[quote.kind]}"
    if quote.answer_channel_id is not None and quote.answer_channel_id in readable.channel_ids:  # never a hidden one
        line += f" https://discord.com/channels/{guild_id}/{quote.answer_channel_id}/{quote.answer_message_id}"
    return line


def overview(guild: discord.Guild, holdings: MemberHoldings, readable: Readable) -> discord.Embed:
    """The first page: counts per channel (by mention, which the member's client names), opt-out, quotations."""
    embed = discord.Embed(title=replies.MINE_TITLE.format(guild=guild.name))
    if holdings.holds_nothing:
        embed.description = replies.MINE_NOTHING
        return embed
    since = f" since {_when(holdings.since, 'D')}" if holdings.since is not None else ""
    lines = [f"<#{c.channel_id}>: {c.messages:,} since {_when(c.first_at, 'D')}"
             for c in holdings.channels[:CHANNELS_SHOWN]]
    if len(holdings.channels) > CHANNELS_SHOWN:
        lines.append(f"and {len(holdings.channels) - CHANNELS_SHOWN} more channel(s)")
    if holdings.hidden_messages:
        lines.append(replies.MINE_HIDDEN.format(messages=holdings.hidden_messages, channels=holdings.hidden_channels))
    embed.description = f"**{holdings.messages:,} messages**{since}\n" + "\n".join(lines)
    opted = (replies.MINE_OPTED_OUT.format(when=_when(holdings.opted_out_at) if holdings.opted_out_at else "")
             if holdings.opted_out else replies.MINE_OPTED_IN)
    embed.add_field(name="Opt-out", value=opted, inline=False)
    quotes = [_quote_line(guild.id, quote, readable) for quote in holdings.quotations[:QUOTES_SHOWN]]
    embed.add_field(name="Where your messages were shown to others",
                    value="\n".join(quotes)[: replies.EMBED_FIELD_CHARS] or replies.MINE_NO_QUOTES, inline=False)
    return embed


def message_line(guild_id: int, message: MemberMessage) -> str:
    text = discord.utils.escape_mentions(snippet(message.content))
    link = f"https://discord.com/channels/{guild_id}/{message.channel_id}/{message.message_id}"
    return f"{_when(message.created_at)} in <#{message.channel_id}>: {text} {link}"


def numbered_pages(title: str, lines: Sequence[str], ids: Sequence[int]) -> list[tuple[discord.Embed, tuple[int, ...]]]:
    """Pages of ``PER_PAGE`` numbered lines each, with the ids of the messages their forget buttons forget."""
    pages = []
    for start in range(0, len(lines), PER_PAGE):
        chunk = lines[start : start + PER_PAGE]
        embed = discord.Embed(title=title, description="\n".join(f"{n}. {line}" for n, line in enumerate(chunk, 1)))
        pages.append((embed, tuple(ids[start : start + PER_PAGE])))
    for number, (embed, _) in enumerate(pages, 1):
        embed.set_footer(text=f"Page {number}/{len(pages)} · Forget n forgets line n (asks first)")
    return pages


class ForgetButton(discord.ui.Button["MinePages"]):
    def __init__(self, number: int) -> None:
        super().__init__(label=f"Forget {number}", style=discord.ButtonStyle.danger, row=1)
        self.number = number

    async def callback(self, interaction: discord.Interaction) -> None:
        assert self.view is not None
        await self.view.forget(interaction, self.number)


class MinePages(Paginator):
    """Previous / Next, and a forget button for each message line of the page shown."""

    def __init__(self, owner_id: int, memory: Memory, pages: Sequence[tuple[discord.Embed, tuple[int, ...]]]) -> None:
        self._ids = [ids for _, ids in pages]
        self._forget_buttons = [ForgetButton(number) for number in range(1, PER_PAGE + 1)]
        super().__init__(owner_id, [embed for embed, _ in pages])
        self.memory = memory
        for button in self._forget_buttons:
            self.add_item(button)

    def _update_buttons(self) -> None:
        super()._update_buttons()
        for button in self._forget_buttons:
            button.disabled = button.number > len(self._ids[self.index])

    async def forget(self, interaction: discord.Interaction, number: int) -> None:
        """Forget line ``number`` of the page shown, with /memory forget's checks and confirm step."""
        member = command_member(interaction)
        try:
            plan = await message_plan(member, self.memory, self._ids[self.index][number - 1])
        except (UserInputError, NotGuildAdmin) as error:
            await interaction.response.send_message(str(error), ephemeral=True)
            return
        await confirm_and_forget(interaction, self.memory, plan)


class MineCommands(commands.Cog):
    """The ``/memory mine`` command, mixed into the ``/memory`` group (commands.MemoryCommands)."""

    def memory(self) -> Memory:
        raise NotImplementedError  # MemoryCommands.memory

    @app_commands.command(name="mine", description="See what the bot remembers of you here (only you see it)")
    @app_commands.describe(search="Search your own messages only")
    @app_commands.guild_only()
    @options_checked()
    async def mine(self, interaction: discord.Interaction,
                   search: app_commands.Range[str, 1, MAX_QUERY_CHARS] | None = None) -> None:
        memory = self.memory()
        member = command_member(interaction)
        readable = readable_now(member)
        await interaction.response.defer(ephemeral=True, thinking=True)
        if search is not None:
            pages = await self._search_pages(memory, member, readable, search)
            if not pages:
                await interaction.followup.send(replies.MINE_NO_MATCH, ephemeral=True)
                return
        else:
            guild_id = member.guild.id
            holdings = await memory.subject_access.holdings(
                guild_id, member.id, readable, opted_out=await memory.is_opted_out(guild_id, member.id),
                quotations=QUOTES_SHOWN)
            latest = await memory.subject_access.latest(guild_id, member.id, readable, LATEST)
            pages = [(overview(member.guild, holdings, readable), ())]
            pages += numbered_pages(replies.MINE_LATEST_TITLE, [message_line(guild_id, m) for m in latest],
                                    [m.message_id for m in latest])
        view = MinePages(member.id, memory, pages)
        await interaction.followup.send(embed=view.current, view=view, ephemeral=True)

    @staticmethod
    async def _search_pages(memory: Memory, member: discord.Member, readable: Readable,
                            query: str) -> list[tuple[discord.Embed, tuple[int, ...]]]:
        """The same search as /memory search, of the member's own messages in channels they can read now."""
        filters = SearchFilters(guild_id=member.guild.id, author_ids=frozenset({member.id}),
                                allowed_channel_ids=readable.channel_ids,
                                public_thread_parent_ids=readable.thread_parent_ids)
        recall = await memory.recall(query, filters, MAX_RESULTS)
        title = replies.MINE_SEARCH_TITLE.format(query=query[:200])
        return numbered_pages(title, [format_memory_line(hit) for hit in recall.hits],
                              [hit.message_id for hit in recall.hits])
