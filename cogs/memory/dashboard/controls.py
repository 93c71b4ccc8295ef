"""The dashboard's controls in words: what a forget will do and did, settings and profile results, and the forgets
waiting for their confirmation. Shared by the pages and the JSON API so both say exactly the same."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from .source import ForgetKind, ForgetResult, ProfileSwitchResult, SettingsView

__all__ = ("PendingForget", "PendingForgets", "forget_done", "forget_plan", "profile_done", "settings_done")

CONFIRM_TTL_S = 300.0
MAX_PENDING = 50


def forget_plan(kind: ForgetKind, guild_id: int, target_id: int) -> str:
    """What the forget covers, as the confirmation asks it."""
    if kind == "message":
        return f"message {target_id} in guild {guild_id}"
    if kind == "member":
        return f"every message of member {target_id} in guild {guild_id}"
    if kind == "channel":
        return f"every message in channel {target_id} of guild {guild_id} (and its threads)"
    return f"every message in guild {guild_id}"


def _messages(count: int) -> str:
    return f"{count} message" if count == 1 else f"{count} messages"


def forget_done(result: ForgetResult) -> str:
    count, guild, target = _messages(result.count), result.guild_id, result.target_id
    what = {
        "message": f"Forgot {count} (message {target}) in guild {guild}",
        "member": f"Forgot {count} of member {target} in guild {guild}",
        "channel": f"Forgot {count} in channel {target} of guild {guild}",
        "guild": f"Forgot {count} in guild {guild}",
    }[result.kind]
    if result.count == 0:
        return f"{what}: memory held nothing of it."
    disk = "erased from the files too" if result.erased_from_disk else "erasing it from the files continues shortly"
    return f"{what}; {disk}."


def settings_done(guild_id: int, settings: SettingsView) -> str:
    retention = f"{settings.retention_days} days" if settings.retention_days else "keep everything"
    return (f"Saved the settings of guild {guild_id}: auto recall {'on' if settings.auto_recall else 'off'}, "
            f"retention {retention}, forget on leave {'on' if settings.forget_on_leave else 'off'}, "
            f"other bots' messages {'stored' if settings.store_bot_messages else 'not stored'}.")


def profile_done(result: ProfileSwitchResult) -> str:
    if result.switched:
        return f"Switched the profile from {result.old} to {result.new}."
    return f"Did not switch the profile from {result.old} to {result.new}: {result.error}"


@dataclass(frozen=True, slots=True)
class PendingForget:
    session: str  # the label of the session that asked; only it may confirm
    kind: ForgetKind
    guild_id: int
    target_id: int
    expires_at: float

    @property
    def description(self) -> str:
        return forget_plan(self.kind, self.guild_id, self.target_id)


class PendingForgets:
    """Forgets asked for and not confirmed yet, by a random id; each confirms once, within ``CONFIRM_TTL_S``."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._pending: dict[str, PendingForget] = {}

    def add(self, session: str, kind: ForgetKind, guild_id: int, target_id: int) -> tuple[str, PendingForget]:
        now = self._clock()
        self._pending = {key: p for key, p in self._pending.items() if p.expires_at > now}
        while len(self._pending) >= MAX_PENDING:
            del self._pending[next(iter(self._pending))]
        pending_id = secrets.token_urlsafe(16)
        pending = PendingForget(session, kind, guild_id, target_id, now + CONFIRM_TTL_S)
        self._pending[pending_id] = pending
        return pending_id, pending

    def take(self, session: str, pending_id: str) -> PendingForget | None:
        pending = self._pending.get(pending_id)
        if pending is None or pending.session != session:
            return None
        del self._pending[pending_id]
        return pending if pending.expires_at > self._clock() else None
