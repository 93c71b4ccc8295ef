"""The memory cog's per-guild settings: a frozen record over the JSON object the store keeps per guild."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

__all__ = ("GuildSettings",)


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
    # channel id -> newest message id a backfill has stored, so the next run resumes after it.
    backfill_progress: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GuildSettings:
        return cls(
            auto_recall=bool(data.get("auto_recall", False)),
            recall_channel_ids=frozenset(int(x) for x in data.get("recall_channel_ids", ())),
            capture_disabled_channel_ids=frozenset(int(x) for x in data.get("capture_disabled_channel_ids", ())),
            retention_days=data.get("retention_days"),
            forget_on_leave=bool(data.get("forget_on_leave", False)),
            backfill_progress={int(k): int(v) for k, v in data.get("backfill_progress", {}).items()},
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["recall_channel_ids"] = sorted(self.recall_channel_ids)
        data["capture_disabled_channel_ids"] = sorted(self.capture_disabled_channel_ids)
        data["backfill_progress"] = {str(k): v for k, v in self.backfill_progress.items()}
        return data

    def with_changes(self, **changes: Any) -> GuildSettings:
        return replace(self, **changes)
