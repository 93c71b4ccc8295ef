"""Which guilds hold a channel id. A channel belongs to one guild (its id is a Discord snowflake), so ingest refuses a
message whose channel another guild holds (ingest/channels.py). Read through the guild-first indexes, one guild at a
time: a few index seeks per guild, no index by channel alone."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

__all__ = ("ChannelGuildsMixin",)

# The guilds (a skip scan of messages_guild_time), then for each an index seek for the channel among its messages'
# channels and among its public threads' parents (a private thread's parent is seen once its channel's own messages
# are stored).
SELECT_CHANNEL_GUILDS = """
WITH RECURSIVE guilds(id) AS (
    SELECT (SELECT MIN(guild_id) FROM messages)
    UNION ALL
    SELECT (SELECT MIN(guild_id) FROM messages WHERE guild_id > guilds.id) FROM guilds WHERE guilds.id IS NOT NULL
)
SELECT guilds.id FROM guilds WHERE guilds.id IS NOT NULL AND (
    EXISTS (SELECT 1 FROM messages AS m WHERE m.guild_id = guilds.id AND m.channel_id = ?1)
    OR EXISTS (SELECT 1 FROM messages AS m WHERE m.guild_id = guilds.id AND m.parent_channel_id = ?1
               AND m.private_thread = 0))
"""


class ChannelGuildsMixin:
    """SqliteStore's channel owners: reads on the writer's connection (the writer asks, under its lock)."""

    _conn: aiosqlite.Connection

    async def channel_guilds(self, channel_ids: Sequence[int]) -> dict[int, set[int]]:
        """The guilds holding each of ``channel_ids`` as a message's channel or a public thread's parent; an id no
        guild holds is left out."""
        held: dict[int, set[int]] = {}
        for channel_id in dict.fromkeys(channel_ids):
            rows = await self._conn.execute_fetchall(SELECT_CHANNEL_GUILDS, (channel_id,))
            if rows:
                held[channel_id] = {int(row[0]) for row in rows}
        return held
