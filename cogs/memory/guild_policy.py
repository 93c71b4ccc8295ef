"""Guild policy: each guild's settings (a frozen record over the JSON the store keeps), its members' opt-outs,
and retention. The process's own configuration is another thing: ``Settings`` in runtime/config.py."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ingest.queue import IngestQueue
    from .store.protocol import GuildPolicyStore

__all__ = ("GuildPolicy", "GuildSettings")

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GuildSettings:
    auto_recall: bool = False
    # Channels where every message (not just mentions and replies) triggers recall when auto_recall is on.
    recall_channel_ids: frozenset[int] = field(default_factory=frozenset)
    # Channels whose messages are not stored at all.
    capture_disabled_channel_ids: frozenset[int] = field(default_factory=frozenset)
    # Messages older than this many days are forgotten; None keeps everything.
    retention_days: int | None = None
    # Forget a member's messages when they leave the server.
    forget_on_leave: bool = False
    # Store other bots' and webhooks' messages (a level-up bot's posts are noise in recall); this bot's own are kept.
    store_bot_messages: bool = False
    # Note where members' messages were quoted (privacy/quotations.py), and for how many days the notes are kept.
    quotation_log: bool = True
    quotation_retention_days: int = 90
    # A member may download what memory holds of them (/memory export) once in this many hours (0: no limit).
    export_interval_hours: int = 24

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GuildSettings:
        return cls(
            auto_recall=bool(data.get("auto_recall", False)),
            recall_channel_ids=frozenset(int(x) for x in data.get("recall_channel_ids", ())),
            capture_disabled_channel_ids=frozenset(int(x) for x in data.get("capture_disabled_channel_ids", ())),
            retention_days=data.get("retention_days"),
            forget_on_leave=bool(data.get("forget_on_leave", False)),
            store_bot_messages=bool(data.get("store_bot_messages", False)),
            quotation_log=bool(data.get("quotation_log", True)),
            quotation_retention_days=int(data.get("quotation_retention_days", 90)),
            export_interval_hours=int(data.get("export_interval_hours", 24)),
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["recall_channel_ids"] = sorted(self.recall_channel_ids)
        data["capture_disabled_channel_ids"] = sorted(self.capture_disabled_channel_ids)
        return data

    def with_changes(self, **changes: Any) -> GuildSettings:
        return replace(self, **changes)


class GuildPolicy:
    """Settings and opt-outs cached in front of the store (the source of truth), and the retention sweep.

    Every change goes through here, so the caches never go stale; forgetting goes through the ingest queue, so
    SQLite, FTS5 and FAISS stay in step.
    """

    def __init__(self, store: GuildPolicyStore, ingest: IngestQueue) -> None:
        self._store = store
        self._ingest = ingest
        self._settings: dict[int, GuildSettings] = {}
        self._opt_outs: set[tuple[int, int]] | None = None

    async def settings(self, guild_id: int) -> GuildSettings:
        try:
            return self._settings[guild_id]
        except KeyError:
            settings = GuildSettings.from_json(await self._store.guild_settings(guild_id))
            self._settings[guild_id] = settings
            return settings

    async def save_settings(self, guild_id: int, settings: GuildSettings) -> None:
        for key, value in settings.to_json().items():
            await self._store.set_guild_setting(guild_id, key, value)
        self._settings[guild_id] = settings

    def forget_guild(self, guild_id: int) -> None:
        """Drops what is cached for a guild whose memory was deleted."""
        self._settings.pop(guild_id, None)

    async def is_opted_out(self, guild_id: int, user_id: int) -> bool:
        if self._opt_outs is None:
            self._opt_outs = await self._store.opt_outs()
        return (guild_id, user_id) in self._opt_outs

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        await self._store.set_opt_out(guild_id, user_id, opted_out)
        if self._opt_outs is None:
            self._opt_outs = await self._store.opt_outs()
        (self._opt_outs.add if opted_out else self._opt_outs.discard)((guild_id, user_id))

    async def apply_retention(self, now: datetime) -> int:
        """Forgets, in every guild with ``retention_days``, the messages older than that; returns how many."""
        total = 0
        for guild_id in await self._store.guild_ids():
            days = (await self.settings(guild_id)).retention_days
            if days:
                count = await self._ingest.delete_older_than(guild_id, now - timedelta(days=days))
                log.info("Retention: forgot %d messages older than %d days in guild %d", count, days, guild_id)
                total += count
        return total
