"""Every sentence the memory commands say to users, in one place so tests and wording stay in step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

import discord

if TYPE_CHECKING:
    from .catchup import CatchUpStatus
    from ..records import MemoryStats
    from ..guild_policy import GuildSettings
    from ..runtime.profile import MemoryProfile
    from ..rerank.providers import ProviderStatus
    from ..rerank.service import RerankerStatus

# Discord refuses an embed whose field value is longer.
EMBED_FIELD_CHARS = 1024
MEMORY_LOADING = "Memory is still loading its models (this takes a minute after the bot starts). Try again shortly."
MEMORY_FAILED = "Memory could not be opened; the bot's owner has been told in the logs."
MEMORY_UNREACHABLE = ("Memory is not available yet: the database is unreachable. I keep trying, and I keep what is "
                      "said meanwhile; ask again in a few minutes.")
GUILD_ONLY = "Memory commands only work in a server."
UNEXPECTED = "Something went wrong on my side; it has been logged. Please try again later."
BAD_DATE = "`{value}` is not a date I understand. Use YYYY-MM-DD, for example 2024-05-31."
BAD_OPTION = "I can't use `{value}` there: pick it from Discord's suggestions (a channel I can see, a member here)."
CANNOT_READ_CHANNEL = "You can't read {channel}, so I can't search it for you."
NO_RESULTS = "Nothing in memory matches that in the channels you can read."
DATE_OUT_OF_RANGE = "`{value}` is outside Discord's lifetime. Use a date from 2015-01-01 to today."
DATES_REVERSED = "`after` must be earlier than `before`; you gave after {after} and before {before}."

# Options checked against what each command declares: Discord's client enforces these, a crafted request need not.
OPTION_MISSING = "`{name}` is required; fill it in."
OPTION_NOT_A = "`{name}` must be {kind}; you gave `{value}`."
OPTION_CHOICE = "`{name}` must be one of {choices}; you gave `{value}`."
OPTION_RANGE = "`{name}` must be between {low} and {high}; you gave {value}."
OPTION_LENGTH = "`{name}` must be {low} to {high} characters long; you gave {length}."
OPTION_BLANK = "`{name}` can't be blank; write something in it."

FORGET_CONFIRM = "This will make me forget {what}. This cannot be undone. Forget it?"
FORGET_CANCELLED = "Cancelled: nothing was forgotten."
FORGOTTEN = "Done: forgot {count} messages ({what})."
FORGET_ADMIN_ONLY = "Only members with Manage Server can make me forget a whole channel or another member."
FORGET_NEEDS_CHANNEL = "Pick the channel to forget with the `channel` option."
FORGET_NEEDS_MEMBER = "Pick the member to forget with the `member` option."
FORGET_NEEDS_LINK = "Paste the message's link in the `message_link` option (right-click the message, Copy Message Link)."
FORGET_OPTION_UNUSED = "`{option}` doesn't go with what:{what}; leave it out."
FORGET_BAD_LINK = "Give a message link from this server (right-click the message, Copy Message Link)."
FORGET_NOT_STORED = "I don't have that message in memory."
FORGET_NOT_YOURS = "That message isn't yours; only members with Manage Server can make me forget it."
# A forget, opt-out or opt-in, or capture switch the erasure ledger could not record (privacy/ledger.py) is not done.
NOT_RECORDED = ("Not done: I could not write it in my erasure ledger ({reason}), so nothing was forgotten or changed. "
                "The bot's host has to free disk space (or make the ledger writable); then try again.")

OPTED_OUT = "I will no longer remember your messages here, and I forgot the {count} I had. Use /memory optin to undo."
OPTED_IN = "I will remember your messages here again from now on."

BACKFILL_STARTED = "Reading the history of {channel}…"
BACKFILL_PROGRESS = "Reading the history of {channel}: {count} messages so far…"
BACKFILL_DONE = "Backfill of {channel} finished: read {count} messages, newest first. Run it again to go further back."
BACKFILL_RUNNING = "A backfill of {channel} is already running; wait for it to finish."
BACKFILL_CAPTURE_OFF = "Capture is off in {channel}, so its history is not read either: turn it on with /memory settings first."
BACKFILL_FAILED = ("Backfill of {channel} stopped after {count} messages: Discord answered {status} ({error}). "
                   "What it read is saved; run it again to go on from there.")
BACKFILL_NOT_STORED = ("Backfill of {channel} stopped after reading {count} messages: {not_stored} of them could not "
                       "be stored ({reason}). I keep them and keep trying; run the backfill again later to go on.")

# /memory stats: the catch-up after the bot (re)connected.
CATCHUP_NOT_RUN = "not run yet: it starts once the bot has connected"
CATCHUP_RUNNING = "reading channel {done} of {channels}: {counts} so far"
CATCHUP_DONE = "finished {when}: {channels} channels, {counts}"
CATCHUP_COUNTS = "{read:,} messages read, {added:,} new, {edited:,} edited, {deleted:,} deleted"
CATCHUP_UNREAD = "{failed} channels could not be read; they go on from their saved place later"

SETTINGS_CAPTURE_PAIR = "Use `capture_channel` and `capture` together, e.g. capture_channel:#off-topic capture:False."

UNKNOWN_PROFILE = "There is no profile called `{name}`. See /memory profile list."
PROFILE_SWITCH_FAILED = "Could not switch to `{name}`; still using the old profile. Reason: {error}"
SYNCED = "Synced {count} slash commands."
SYNC_FAILED = ("Discord refused the command sync ({status}: {error}). For a dev guild, check DEV_GUILD_ID and that "
               "the bot was invited there with the `applications.commands` scope.")

# The profile fields worth reporting when they change, flattened as "reranker.model".
PROFILE_DIFF_SKIP = frozenset({"name", "description", "reranker.instruction"})


def _channels(ids: frozenset[int]) -> str:
    return ", ".join(f"<#{i}>" for i in sorted(ids)) or "none"


def _quotation_log(settings: GuildSettings) -> str:
    return f"on, notes kept {settings.quotation_retention_days} days" if settings.quotation_log else "off"


def _exports(settings: GuildSettings) -> str:
    hours = settings.export_interval_hours
    return f"one every {hours} hours per member" if hours else "no limit"


def settings_summary(settings: GuildSettings) -> str:
    retention = "keep everything" if settings.retention_days is None else f"{settings.retention_days} days"
    return "\n".join(
        [
            "**Memory settings for this server**",
            f"Auto-recall: {'on' if settings.auto_recall else 'off'} in {_channels(settings.recall_channel_ids)}",
            f"Not captured: {_channels(settings.capture_disabled_channel_ids)}",
            f"Retention: {retention}",
            f"Forget members who leave: {'yes' if settings.forget_on_leave else 'no'}",
            f"Other bots' and webhooks' messages: {'stored' if settings.store_bot_messages else 'not stored'}",
            f"Quotation log: {_quotation_log(settings)}",
            f"Member exports: {_exports(settings)}",
        ]
    )


def flatten_profile(profile: Any, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for field in fields(profile):
        value = getattr(profile, field.name)
        if is_dataclass(value):
            flat.update(flatten_profile(value, f"{prefix}{field.name}."))
        elif isinstance(value, tuple) and all(is_dataclass(item) for item in value):  # [[reranker.providers]]
            for i, item in enumerate(value):
                flat.update(flatten_profile(item, f"{prefix}{field.name}[{i}]."))
        else:
            flat[f"{prefix}{field.name}"] = value
    return flat


def profile_summary(profile: MemoryProfile) -> str:
    lines = [f"**Profile `{profile.name}`**: {profile.description}"]
    lines += [f"{key}: `{value}`" for key, value in flatten_profile(profile).items() if key not in PROFILE_DIFF_SKIP | {"name"}]
    return "\n".join(lines)


def profile_list(names: Sequence[str], current: str | None) -> str:
    return "\n".join(["**Profiles**", *(f"- `{n}`" + (" (current)" if n == current else "") for n in names)])


def profile_changes(old: MemoryProfile, new: MemoryProfile) -> str:
    before, after = flatten_profile(old), flatten_profile(new)
    changed = [
        f"{key}: `{before.get(key)}` → `{after.get(key)}`"
        for key in dict.fromkeys([*after, *before])
        if before.get(key) != after.get(key) and key not in PROFILE_DIFF_SKIP
    ]
    if old.name == new.name or not changed:
        return f"Already using `{new.name}`; nothing changed."
    return "\n".join([f"Switched from `{old.name}` to `{new.name}`. What changed:", *changed])


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _latency(samples: Sequence[float]) -> str:
    if not samples:
        return "no samples yet"
    ordered = sorted(samples)
    p50 = ordered[len(ordered) // 2]
    p95 = ordered[min(int(0.95 * len(ordered)), len(ordered) - 1)]
    return f"p50 {p50:.0f} ms · p95 {p95:.0f} ms ({len(ordered)} samples)"


def _provider_state(provider: ProviderStatus) -> str:
    return f"unavailable: {provider.reason}" if provider.state == "unavailable" else provider.state


def _reranker(status: RerankerStatus | None) -> str:
    """The model and each provider's state, in the order recalls try them (cut to fit an embed field: a load
    failure's reason says what to do at length)."""
    if status is None or status.provider == "none":
        return "off"
    providers = status.providers
    if len(providers) == 1:
        text = f"{status.model} ({providers[0].provider}, {_provider_state(providers[0])})"
    else:
        text = f"{status.model} ({' → '.join(f'{p.provider}: {_provider_state(p)}' for p in providers)})"
    return text if len(text) <= EMBED_FIELD_CHARS else text[:EMBED_FIELD_CHARS - 1] + "…"


def reranking_summary(status: RerankerStatus) -> str:
    """How the reranker ran over the last hour: backend and dtype, ms per query, candidates scored, cache hits, and
    which providers scored when more than one did."""
    runs_on = status.providers[0].label if status.loaded else ("loading" if status.loading else "not loaded yet")
    hour = status.last_hour
    if not hour.queries_last_hour:
        return f"{runs_on} · no queries in the last hour"
    prefix, queries, by = status.prefix_cache_hits, hour.queries_last_hour, hour.scored_by
    scored_by = "" if list(by) in ([], [runs_on]) else " · scored by " + ", ".join(
        f"{label} ({count})" for label, count in by.items())
    return (f"{runs_on} · p50 {hour.p50_ms:,.0f} ms · p95 {hour.p95_ms:,.0f} ms per query "
            f"({queries} {'query' if queries == 1 else 'queries'}) · {hour.scored_per_recall:.1f} of "
            f"{hour.offered_per_recall:.1f} candidates scored per recall · cache hits: "
            f"{status.cache_hits:,} scores" + ("" if prefix is None else f", {prefix:,} prompt prefixes")
            + scored_by + ("" if status.precision is None else f" · precision {status.precision}"))


def catch_up_summary(status: CatchUpStatus | None) -> str:
    if status is None:
        return CATCHUP_NOT_RUN
    counts = CATCHUP_COUNTS.format(read=status.read, added=status.added, edited=status.edited,
                                   deleted=status.deleted)
    if status.finished_at is None:
        line = CATCHUP_RUNNING.format(done=min(status.done + status.failed + 1, status.channels),
                                      channels=status.channels, counts=counts)
    else:
        line = CATCHUP_DONE.format(when=discord.utils.format_dt(status.finished_at, "R"), channels=status.channels,
                                   counts=counts)
    return f"{line}. {CATCHUP_UNREAD.format(failed=status.failed)}." if status.failed else f"{line}."


def stats_embed(guild_name: str, stats: MemoryStats, profile: str, reranker: RerankerStatus | None,
                latencies: Mapping[str, Sequence[float]], catch_up: CatchUpStatus | None = None) -> discord.Embed:
    embed = discord.Embed(title=f"Memory of {guild_name}")
    embed.add_field(name="Messages", value=f"{stats.messages:,}")
    embed.add_field(name="Vectors", value=f"{stats.index.vectors:,} ({stats.index.kind})")
    embed.add_field(name="Index size", value=f"{_mib(stats.index.memory_bytes)} in memory, "
                                             f"{_mib(stats.index.file_bytes)} on disk")
    embed.add_field(name="Profile", value=f"{profile} (embeddings: {stats.embedding_model})", inline=False)
    embed.add_field(name="Reranker", value=_reranker(reranker), inline=False)
    if reranker is not None and reranker.provider != "none":
        embed.add_field(name="Reranking (last hour)", value=reranking_summary(reranker), inline=False)
    embed.add_field(name="Search latency", value=_latency(latencies["search"]), inline=False)
    embed.add_field(name="Recall latency (search + rerank)", value=_latency(latencies["recall"]), inline=False)
    embed.add_field(name="Catch-up", value=catch_up_summary(catch_up), inline=False)
    if stats.queued:
        embed.set_footer(text=f"{stats.queued} messages waiting to be indexed")
    return embed

# /memory mine and /memory export: what memory holds of the member who asks.
MINE_TITLE = "What I remember of you in {guild}"
MINE_NOTHING = "I hold nothing of you in this server: no message, no opt-out, no note of where you were quoted."
MINE_OPTED_OUT = "You opted out here {when}: I don't remember what you say. Use /memory optin to undo."
MINE_OPTED_IN = "You are not opted out: I remember what you say here. Use /memory optout to stop that."
MINE_HIDDEN = "{messages} more in {channels} channel(s) you can no longer read (not shown)."
MINE_NO_QUOTES = "None of your messages has been shown to anyone else lately."
MINE_LATEST_TITLE = "Your latest messages I remember"
MINE_SEARCH_TITLE = "Your messages matching: {query}"
MINE_NO_MATCH = "None of your messages I remember matches that, in the channels you can read."
EXPORT_NOT_YET = "You can have one export every {hours} hours; your next one is ready {when}."
EXPORT_RUNNING = "Your export is already being made; it will arrive here."
EXPORT_NOTHING = "I hold nothing of you in this server, so there is nothing to export."
EXPORT_SENT = ("Here is everything I hold of you in this server ({messages} messages, {quotes} notes of where they "
               "were quoted), in {parts} part(s): JSON, and the same as a web page. {hidden}")
EXPORT_HIDDEN = "{messages} more are in channels you can no longer read: counted, not included."
EXPORT_PART = "Part {number} of {parts}."
EXPORT_FAILED = "I could not finish your export; nothing was counted against your limit. Please try again later."
