"""Which guilds hold a channel id, in PostgreSQL: the same question as the SQLite side (sqlite/channels.py), asked
for every id at once, through the same guild-first indexes."""

from __future__ import annotations

from collections.abc import Sequence

from .faults import GuardedPool

__all__ = ("ChannelGuildsMixin",)

SELECT_CHANNEL_GUILDS = """
WITH RECURSIVE guilds(id) AS (
    SELECT (SELECT min(guild_id) FROM messages)
    UNION ALL
    SELECT (SELECT min(guild_id) FROM messages WHERE guild_id > guilds.id) FROM guilds WHERE guilds.id IS NOT NULL
)
SELECT c.id, guilds.id FROM unnest($1::bigint[]) AS c(id) CROSS JOIN guilds WHERE guilds.id IS NOT NULL AND (
    EXISTS (SELECT 1 FROM messages AS m WHERE m.guild_id = guilds.id AND m.channel_id = c.id)
    OR EXISTS (SELECT 1 FROM messages AS m WHERE m.guild_id = guilds.id AND m.parent_channel_id = c.id
               AND NOT m.private_thread))
"""


class ChannelGuildsMixin:
    """PostgresStore's channel owners."""

    _pool: GuardedPool

    async def channel_guilds(self, channel_ids: Sequence[int]) -> dict[int, set[int]]:
        """The guilds holding each of ``channel_ids`` as a message's channel or a public thread's parent; an id no
        guild holds is left out."""
        held: dict[int, set[int]] = {}
        if not channel_ids:
            return held
        for channel_id, guild_id in await self._pool.fetch(SELECT_CHANNEL_GUILDS, list(dict.fromkeys(channel_ids))):
            held.setdefault(int(channel_id), set()).add(int(guild_id))
        return held
