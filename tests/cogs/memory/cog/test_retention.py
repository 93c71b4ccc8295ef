"""The listeners' retention sweep: messages older than a guild's ``retention_days`` are forgotten."""

from datetime import timedelta

import discord

from cogs.memory.records import MessageRecord, SearchFilters
from cogs.memory.guild_policy import GuildSettings
from tests.fixtures.interactions import snowflake


def said(guild, channel, member, content, days_ago):
    return MessageRecord(message_id=snowflake(),
                         guild_id=guild.id, channel_id=channel.id, parent_channel_id=None, author_id=member.id,
                         author_name=member.display_name, content=content,
                         created_at=discord.utils.utcnow() - timedelta(days=days_ago))


async def test_the_sweep_forgets_what_is_older_than_the_guilds_retention(memory_bot, guild, channel, member):
    memory = memory_bot.memory
    await memory.save_settings(guild.id, GuildSettings(retention_days=30))
    await memory.add(said(guild, channel, member, "the old picnic was in May", days_ago=40))
    await memory.add(said(guild, channel, member, "the new picnic is on Saturday", days_ago=1))
    await memory.flush(vectors=True)
    await memory_bot.get_cog("MemoryListeners").retention()
    hits = await memory.search("picnic", SearchFilters(guild_id=guild.id), 5)
    assert [hit.content for hit in hits] == ["the new picnic is on Saturday"]
