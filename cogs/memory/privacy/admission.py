"""The one rule every way in obeys (live capture, catch-up, backfill, import): a message is stored only if live
capture would store it now. Checked by the ingest writer for every batch, under the write lock, against what the
database says at that moment, so an opt-out, a forget or a capture switch committed before the write always wins."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..store.history import Exclusion, HistoryLedger
from ..records import MessageRecord
from ..guild_policy import GuildSettings
from ..store.protocol import GuildRulesSource

__all__ = ("Admission", "GuildRules", "SHORT_REASONS", "refusal")

CAPTURE_OFF = "capture is off in its channel"
BOT_OR_WEBHOOK = "it was written by a bot or a webhook"
OPTED_OUT = "its author opted out"
FORGOTTEN = "it was forgotten, or said while capture was off"
PAST_RETENTION = "it is older than the guild keeps messages"
# Each refusal in a few words, for a tally ("3 skipped (2 opted out, 1 bot or webhook)").
SHORT_REASONS = {CAPTURE_OFF: "capture off", BOT_OR_WEBHOOK: "bot or webhook", OPTED_OUT: "opted out",
                 FORGOTTEN: "forgotten", PAST_RETENTION: "past retention"}


@dataclass(frozen=True, slots=True)
class GuildRules:
    """What one guild's settings, opt-outs and history exclusions say about its messages now."""

    settings: GuildSettings
    opted_out: frozenset[int]
    exclusions: tuple[Exclusion, ...]


def refusal(record: MessageRecord, rules: GuildRules, now: float) -> str | None:
    """Why live capture would not store ``record`` now, or None when it would."""
    disabled = rules.settings.capture_disabled_channel_ids
    if record.channel_id in disabled or record.parent_channel_id in disabled:
        return CAPTURE_OFF
    if record.automated and not rules.settings.store_bot_messages:
        return BOT_OR_WEBHOOK
    if record.author_id in rules.opted_out:
        return OPTED_OUT
    created = record.created_at.timestamp()
    if any(exclusion.covers(record.channel_id, record.parent_channel_id, record.author_id, record.message_id, created)
           for exclusion in rules.exclusions):
        return FORGOTTEN
    days = rules.settings.retention_days
    if days and created < now - days * 86_400:
        return PAST_RETENTION
    return None


class Admission:
    """Reads each guild's rules from the store (settings, opt-outs, history exclusions) and applies ``refusal``.

    Nothing is cached: another process (an import beside the bot) may have changed them since the last batch.
    """

    def __init__(self, store: GuildRulesSource, history: HistoryLedger) -> None:
        self._store = store
        self._history = history

    async def refused(self, records: Sequence[MessageRecord]) -> dict[int, str]:
        """Message id → why, for each of ``records`` live capture would not store now."""
        if not records:
            return {}
        opt_outs = await self._store.opt_outs()
        now = time.time()
        rules: dict[tuple[int, int, int | None], GuildRules] = {}
        settings: dict[int, GuildSettings] = {}
        refused: dict[int, str] = {}
        for record in records:
            key = (record.guild_id, record.channel_id, record.parent_channel_id)
            if key not in rules:
                if record.guild_id not in settings:
                    settings[record.guild_id] = GuildSettings.from_json(
                        await self._store.guild_settings(record.guild_id))
                exclusions = await self._history.exclusions(*key)
                opted_out = frozenset(user for guild, user in opt_outs if guild == record.guild_id)
                rules[key] = GuildRules(settings[record.guild_id], opted_out, tuple(exclusions))
            reason = refusal(record, rules[key], now)
            if reason is not None:
                refused[record.message_id] = reason
        return refused
