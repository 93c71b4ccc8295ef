"""The memory cog's gateway side: capture every chat message, mirror edits and deletions, and answer on mention."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import discord
from discord.ext import commands, tasks

from . import replies
from .audience import AudienceCache
from .capture import is_chat_message, memory_space_id, note_place, record_from_message
from .latency import Latencies
from ..prompt import ANSWER_RECALL_LIMIT
from ..llm import ChatClient, LLMCheck, LLMConfig, LLMError, log_llm_check
from .permissions import readable_channel_ids, readable_thread_parent_ids
from .recall import (
    NO_MEMORIES_REPLY,
    ONLY_SHARED_CHANNELS_NOTE,
    build_chat_messages,
    build_query,
    format_memories,
    strip_mentions,
    with_note,
)
from ..guild_policy import GuildSettings
from ..records import Hit, SearchFilters
from ..runtime.safe_text import redacted_text
from ..store.member_rows import QuotationKind

if TYPE_CHECKING:
    from bot import MemoryBot

    from ..memory import Memory

log = logging.getLogger(__name__)

# Turns just above the asker's message: read as context and never recalled back (everyone can already see them).
RECENT_TURNS = 6
RECALL_LIMIT = ANSWER_RECALL_LIMIT  # python -m cogs.memory ask recalls as many
RECALL_FAILED_REPLY = "Sorry, I couldn't search my memory just now. Please try again in a moment."
# What an answer showed, and how: noted in the quotation log once the answer is sent.
Shown = tuple[Sequence[Hit], QuotationKind]


class MemoryListeners(commands.Cog):
    """Feeds the memory core from the gateway and runs automatic recall."""

    def __init__(self, bot: MemoryBot, latencies: Latencies | None = None) -> None:
        self.bot = bot
        self.llm: ChatClient | None = None
        self._llm_check: asyncio.Task[LLMCheck] | None = None
        self.user_cooldown = commands.CooldownMapping.from_cooldown(1, 10.0, commands.BucketType.user)
        self.channel_cooldown = commands.CooldownMapping.from_cooldown(4, 30.0, commands.BucketType.channel)
        self.latencies = latencies or Latencies()
        self.audiences = AudienceCache()

    async def cog_load(self) -> None:
        config = LLMConfig.from_settings(self.bot.config)
        if config is not None:
            self.llm = ChatClient(config)
            log.info("Recall answers through the LLM at %s (model %s)", redacted_text(config.base_url), config.model)
            # Once, in the background: the start does not wait on the endpoint.
            self._llm_check = asyncio.create_task(log_llm_check(config), name="llm-check")
        self.retention.start()

    async def cog_unload(self) -> None:
        self.retention.cancel()
        if self._llm_check is not None:
            self._llm_check.cancel()
        if self.llm is not None:
            await self.llm.close()

    @tasks.loop(hours=6)
    async def retention(self) -> None:
        """Forgets messages older than each guild's ``retention_days``."""
        memory = await self.memory()
        if memory is not None:
            await memory.apply_retention()

    @retention.error
    async def retention_error(self, error: BaseException) -> None:
        log.exception("Retention sweep failed; it runs again in 6 hours", exc_info=error)

    async def memory(self) -> Memory | None:
        """The memory core once it has loaded; capture waits for it so nothing said meanwhile is lost."""
        await self.bot.memory_ready.wait()
        return self.bot.memory

    # -- capture -------------------------------------------------------------------------------------------

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        if not is_chat_message(message, store_dms=self.bot.store_dms):
            return  # system notices, and DMs unless the host enabled them, are not stored
        record = record_from_message(message)
        if await self.bot.kept_while_database_away(record):  # stored as memory opens, under the admission rule
            if message.guild is not None and await self._wants_recall(message, GuildSettings()):
                await message.reply(replies.MEMORY_UNREACHABLE, mention_author=False)
            return
        memory = await self.memory()
        if memory is None:
            return
        guild_id = memory_space_id(message)
        settings = await memory.settings(guild_id)
        # The rule is the core's (admission.py: ingest refuses these as it writes); checked here, from the caches,
        # only so that what it would refuse is not queued.
        if (message.channel.id not in settings.capture_disabled_channel_ids
                and (settings.store_bot_messages or not record.automated)
                and not await memory.is_opted_out(guild_id, message.author.id)):
            note_place(memory.names, message.channel)
            await memory.add(record)
        if message.guild is not None and await self._wants_recall(message, settings):
            await self.recall_and_reply(message)

    @commands.Cog.listener()
    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if "content" not in payload.data:
            return  # embeds resolving also arrive as edits; only a content change matters
        memory = await self.memory()
        if memory is None:
            return
        edited_at = discord.utils.parse_time(payload.data.get("edited_timestamp")) or discord.utils.utcnow()
        await memory.edit(payload.message_id, payload.data["content"], edited_at)

    # What Discord deleted is forgotten even when the erasure ledger cannot record it (a full disk): Erasures warns.

    @commands.Cog.listener()
    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        if (memory := await self.memory()) is not None:
            await memory.delete([payload.message_id])  # DMs too, where they are stored

    @commands.Cog.listener()
    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        if (memory := await self.memory()) is not None:
            await memory.delete(sorted(payload.message_ids))

    @commands.Cog.listener()
    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        if (memory := await self.memory()) is not None:
            await memory.forget_channel(channel.guild.id, channel.id, on_discord=True)

    @commands.Cog.listener()
    async def on_raw_thread_delete(self, payload: discord.RawThreadDeleteEvent) -> None:
        if (memory := await self.memory()) is not None:
            await memory.forget_channel(payload.guild_id, payload.thread_id, on_discord=True)

    # Renames change a name memory holds (a rename alone records none); the background write costs no round trip.

    @commands.Cog.listener()
    async def on_guild_channel_update(self, before: discord.abc.GuildChannel,
                                      after: discord.abc.GuildChannel) -> None:
        if before.name != after.name and (memory := await self.memory()) is not None:
            memory.names.rename_channel(after.guild.id, after.id, after.name)

    @commands.Cog.listener()
    async def on_thread_update(self, before: discord.Thread, after: discord.Thread) -> None:
        if before.name != after.name and (memory := await self.memory()) is not None:
            memory.names.rename_channel(after.guild.id, after.id, after.name, after.parent_id)

    @commands.Cog.listener()
    async def on_guild_update(self, before: discord.Guild, after: discord.Guild) -> None:
        if before.name != after.name and (memory := await self.memory()) is not None:
            memory.names.rename_guild(after.id, after.name)

    @commands.Cog.listener()
    async def on_guild_remove(self, guild: discord.Guild) -> None:
        if (memory := await self.memory()) is not None:
            log.info("Removed from guild %d; forgetting its memory", guild.id)
            await memory.forget_guild(guild.id, on_discord=True)
        self.audiences.forget_guild(guild.id)

    @commands.Cog.listener()
    async def on_raw_member_remove(self, payload: discord.RawMemberRemoveEvent) -> None:
        if (memory := await self.memory()) is None:
            return
        if (await memory.settings(payload.guild_id)).forget_on_leave:
            count = await memory.forget_author(payload.guild_id, payload.user.id, on_discord=True)
            log.info("Member %d left guild %d; forgot %d messages", payload.user.id, payload.guild_id, count)

    # -- automatic recall ----------------------------------------------------------------------------------

    async def _wants_recall(self, message: discord.Message, settings: GuildSettings) -> bool:
        if message.author.bot or self.bot.user is None:
            return False  # bots' messages are remembered but never trigger recall
        me = self.bot.user
        reference = message.reference
        replied_to_me = (
            reference is not None
            and isinstance(reference.resolved, discord.Message)
            and reference.resolved.author.id == me.id
        )
        in_auto_channel = settings.auto_recall and message.channel.id in settings.recall_channel_ids
        if not (me in message.mentions or replied_to_me or in_auto_channel):
            return False
        if (await self.bot.get_context(message)).valid:
            return False  # "@bot sync" is a command, not a question
        retry_after = self.user_cooldown.update_rate_limit(message) or self.channel_cooldown.update_rate_limit(message)
        if retry_after:
            # Silence rather than a "slow down" reply: answering a flood with notices is a flood too.
            log.debug("Recall cooldown for %d in channel %d: %.1fs left", message.author.id, message.channel.id,
                      retry_after)
            return False
        return True

    async def _context_turns(self, message: discord.Message) -> tuple[list[str], frozenset[int]]:
        """The replied-to message and the recent turns (newest first), and the ids of everything already visible."""
        turns: list[str] = []
        seen = {message.id}
        reference = message.reference
        if reference is not None and isinstance(reference.resolved, discord.Message):
            turns.append(reference.resolved.content)
            seen.add(reference.resolved.id)
        async for earlier in message.channel.history(limit=RECENT_TURNS, before=message):
            turns.append(earlier.content)
            seen.add(earlier.id)
        return turns, frozenset(seen)

    async def recall_and_reply(self, message: discord.Message) -> None:
        shown: Shown = ((), "answer")
        try:
            async with message.channel.typing():
                reply, shown = await self._answer(message)
        except Exception:  # noqa: BLE001 - the member gets a generic reply, the log gets the traceback
            log.exception("Recall failed for message %d in channel %d", message.id, message.channel.id)
            reply = RECALL_FAILED_REPLY
        sent = await message.reply(reply, mention_author=False)
        memory = self.bot.memory
        if memory is not None and shown[0]:  # where each quoted member's words went (privacy/quotations.py)
            memory.quotations.note(shown[0], shown[1], message.author.id, answer_channel_id=sent.channel.id,
                                   answer_message_id=sent.id)

    async def _answer(self, message: discord.Message) -> tuple[str, Shown]:
        """The public reply: only what everyone who sees this channel may read, and what the asker may read too."""
        memory = self.bot.memory
        author = message.author
        channel = message.channel
        if (memory is None or not isinstance(author, discord.Member)
                or not isinstance(channel, discord.abc.GuildChannel | discord.Thread)):
            return NO_MEMORIES_REPLY, ((), "answer")
        turns, visible = await self._context_turns(message)
        query = build_query(message.content, turns)
        readable = readable_channel_ids(author)
        audience = await self.audiences.audience(channel)
        # Said whenever the asker reads more than this channel's readers do, whatever matched, so the reply never
        # hints that a hidden channel held the answer.
        note = ONLY_SHARED_CHANNELS_NOTE if readable - audience.channel_ids else None
        filters = SearchFilters(
            guild_id=author.guild.id,
            allowed_channel_ids=readable & audience.channel_ids,
            public_thread_parent_ids=readable_thread_parent_ids(author, readable) & audience.thread_parent_ids,
            exclude_message_ids=visible,
        )
        recall = await memory.recall(query, filters, RECALL_LIMIT)
        self.latencies.recalled(recall)
        results = recall.hits
        log.debug("Recall for %d: %r -> %d results", message.id, query, len(results))
        asked = self.bot.user in message.mentions or message.reference is not None
        listed: QuotationKind = "answer" if asked else "auto"
        if not results or self.llm is None:
            return format_memories(results, note), (results, listed)
        answer = await self._llm_answer(author.display_name, strip_mentions(message.content), results, note)
        return answer or format_memories(results, note), (results, "llm" if answer else listed)

    async def _llm_answer(self, asker: str, question: str, results: Sequence[Hit], note: str | None) -> str | None:
        """The LLM's answer from ``results`` alone (they already obey the audience rule, so the prompt does too);
        None when it failed: the memories are the answer."""
        assert self.llm is not None
        try:
            text = await self.llm.complete(build_chat_messages(asker, question, results))
        except LLMError as error:
            log.warning("LLM answer failed, replying with the memories instead: %s", error)
            return None
        return with_note(text, note)
