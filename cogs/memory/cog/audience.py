"""The audience rule: which channels a reply posted in a channel may quote, because everyone who sees it reads them.

A reply in channel C is read by everyone who can see C, not by the asker alone. It may quote channel X only if every
member who can see C can also read X's history. That is decided from roles and permission overwrites, never by
walking members, so it costs the same in a 100-member guild as in a 100k-member one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import discord

__all__ = (
    "Audience",
    "AudienceCache",
    "ChannelRules",
    "GuildRules",
    "GuildRulesReader",
    "Overwrite",
    "guild_rules",
    "shareable_channel_ids",
)

log = logging.getLogger(__name__)

# Only two permissions decide who reads what; everything below works on these two bits.
VIEW = 1
HISTORY = 2
READ = VIEW | HISTORY
_VIEW_FLAG = discord.Permissions(view_channel=True).value
_HISTORY_FLAG = discord.Permissions(read_message_history=True).value


def read_bits(permissions: int) -> int:
    """A Discord permission value reduced to the ``VIEW``/``HISTORY`` bits."""
    return (VIEW if permissions & _VIEW_FLAG else 0) | (HISTORY if permissions & _HISTORY_FLAG else 0)


@dataclass(frozen=True, slots=True)
class Overwrite:
    """One channel overwrite for a role or a member, in read bits."""

    target_id: int
    allow: int = 0
    deny: int = 0


NO_OVERWRITE = Overwrite(0)


@dataclass(frozen=True, slots=True)
class ChannelRules:
    """What decides who reads a channel: its @everyone, role and member overwrites (a synced channel holds a copy of
    its category's). Role overwrites of administrator roles are left out: those members read everything anyway."""

    channel_id: int
    everyone: Overwrite = NO_OVERWRITE
    roles: tuple[Overwrite, ...] = ()
    members: tuple[Overwrite, ...] = ()


@dataclass(frozen=True, slots=True)
class GuildRules:
    """A guild's permissions, reduced to what decides reading; equal rules give equal answers, so it is the cache key.

    ``role_bits`` holds the non-administrator roles whose own permissions grant a read bit @everyone lacks.
    ``member_roles`` holds the relevant roles of cached members who have a member overwrite somewhere;
    ``exempt_member_ids`` the owner and administrators among them. Any other member overwrite belongs to a member
    whose roles are unknown, so every combination of roles is tried for them.
    """

    everyone_bits: int
    everyone_is_admin: bool = False
    role_bits: tuple[tuple[int, int], ...] = ()
    channels: tuple[ChannelRules, ...] = ()
    member_roles: tuple[tuple[int, frozenset[int]], ...] = ()
    exempt_member_ids: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class Audience:
    """What a reply posted in one channel may quote: channel and cached thread ids, and the channels whose public
    threads (archived ones included) it may quote."""

    channel_ids: frozenset[int]
    thread_parent_ids: frozenset[int]


# -- the rule, on plain data --------------------------------------------------------------------------------------


def _apply(bits: int, allow: int, deny: int) -> int:
    return (bits & ~deny) | allow


def _resolve(base: int, everyone: Overwrite, allow: int, deny: int, member: Overwrite | None) -> int:
    """Discord's order: @everyone's overwrite, then every held role's denies and allows together, then the member's."""
    bits = _apply(_apply(base, everyone.allow, everyone.deny), allow, deny)
    return bits if member is None else _apply(bits, member.allow, member.deny)


# A set of held roles, as far as one pair of channels (C, X) can tell them apart, is the OR of the roles' signatures:
# granted base bits, then C's role allow and deny, then X's role allow and deny, two bits each (only VIEW counts on
# C: whoever sees C sees the reply). Only the OR matters, since Discord ORs role permissions, role denies and role
# allows, so there are at most 2**10 states however many roles there are.
def _c_signatures(rules: GuildRules, c: ChannelRules) -> dict[int, int]:
    """Each role's signature as far as C goes: its granted bits and its overwrite on C."""
    signatures = dict(rules.role_bits)
    for overwrite in c.roles:
        signatures[overwrite.target_id] = (signatures.get(overwrite.target_id, 0)
                                           | (overwrite.allow & VIEW) << 2 | (overwrite.deny & VIEW) << 4)
    return signatures


def _pair_signatures(c_signatures: dict[int, int], x: ChannelRules) -> dict[int, int]:
    signatures = dict(c_signatures)
    for overwrite in x.roles:
        signatures[overwrite.target_id] = (signatures.get(overwrite.target_id, 0)
                                           | overwrite.allow << 6 | overwrite.deny << 8)
    return signatures


def _reachable(signatures: Iterable[int]) -> set[int]:
    """Every OR of a subset of ``signatures``: the states some member's roles may put them in."""
    states = {0}
    for signature in set(signatures):
        if signature:
            states |= {state | signature for state in states}
    return states


@dataclass(frozen=True, slots=True)
class _Pair:
    """Whether a member in a given role state (and with these member overwrites) sees C but cannot read X."""

    everyone_bits: int
    c: ChannelRules
    x: ChannelRules

    def breaks(self, state: int, on_c: Overwrite | None = None, on_x: Overwrite | None = None) -> bool:
        base = self.everyone_bits | (state & READ)
        sees_c = _resolve(base, self.c.everyone, state >> 2 & READ, state >> 4 & READ, on_c) & VIEW
        reads_x = _resolve(base, self.x.everyone, state >> 6 & READ, state >> 8 & READ, on_x) == READ
        return bool(sees_c) and not reads_x


def _may_quote(rules: GuildRules, c: ChannelRules, x: ChannelRules, c_signatures: dict[int, int],
               known_roles: dict[int, frozenset[int]]) -> bool:
    """Whether every member who can see ``c`` can read ``x``: no reachable role state, nor member overwrite, breaks it."""
    signatures = _pair_signatures(c_signatures, x)
    states = _reachable(signatures.values())
    pair = _Pair(rules.everyone_bits, c, x)
    if any(pair.breaks(state) for state in states):
        return False
    c_members = {overwrite.target_id: overwrite for overwrite in c.members}
    x_members = {overwrite.target_id: overwrite for overwrite in x.members}
    for member_id in (c_members.keys() | x_members.keys()) - rules.exempt_member_ids:
        on_c, on_x = c_members.get(member_id), x_members.get(member_id)
        if member_id in known_roles:
            held = 0
            for role_id in known_roles[member_id]:
                held |= signatures.get(role_id, 0)
            candidates: Iterable[int] = (held,)
        else:
            candidates = states  # roles unknown (member not cached): any of them
        if any(pair.breaks(state, on_c, on_x) for state in candidates):
            return False
    return True


def shareable_channel_ids(rules: GuildRules, where_id: int) -> frozenset[int]:
    """The guild channels (not threads) that a reply posted in channel ``where_id`` may quote.

    Pure and thread-safe: it may run off the event loop. A channel the rules do not know yields nothing.
    """
    by_id = {channel.channel_id: channel for channel in rules.channels}
    c = by_id.get(where_id)
    if c is None:
        return frozenset()
    if rules.everyone_is_admin:
        return frozenset(by_id)
    c_signatures = _c_signatures(rules, c)
    known_roles = dict(rules.member_roles)
    return frozenset(x.channel_id for x in rules.channels if _may_quote(rules, c, x, c_signatures, known_roles))


# -- from discord.py objects --------------------------------------------------------------------------------------


def _channel_rules(channel: discord.abc.GuildChannel, admin_role_ids: frozenset[int]) -> ChannelRules:
    # ``_overwrites`` is what ``permissions_for`` itself reads (@everyone's first); the public ``overwrites`` builds
    # an object per permission flag, far too slow to run over every channel on each recall.
    everyone, roles, members = NO_OVERWRITE, [], []
    guild_id = channel.guild.id
    for raw in channel._overwrites:
        overwrite = Overwrite(raw.id, read_bits(raw.allow), read_bits(raw.deny))
        if raw.is_member():
            members.append(overwrite)
        elif raw.id == guild_id:
            everyone = overwrite
        elif raw.id not in admin_role_ids:
            roles.append(overwrite)
    return ChannelRules(channel.id, everyone, tuple(roles), tuple(members))


@dataclass(frozen=True, slots=True)
class _ChannelsRead:
    """The channel side of one read, and what is derived from it alone."""

    admin_role_ids: frozenset[int]
    channels: tuple[ChannelRules, ...]
    overwritten_role_ids: frozenset[int]
    overwritten_member_ids: tuple[int, ...]


class GuildRulesReader:
    """Reads one guild's ``GuildRules`` from discord.py's cache on every recall, cheaply.

    discord.py swaps in a new ``_overwrites`` list whenever a channel changes, so a channel whose list is the one read
    last time is not read again; roles and members with overwrites (few) are read every time. No event has to be
    heard for a change to count.
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[list[Any], ChannelRules]] = {}
        self._last: _ChannelsRead | None = None

    def _read_channels(self, guild: discord.Guild, admin_role_ids: frozenset[int]) -> _ChannelsRead:
        if self._last is None or self._last.admin_role_ids != admin_role_ids:
            self._seen = {}
        seen: dict[int, tuple[list[Any], ChannelRules]] = {}
        for channel in guild.channels:
            if isinstance(channel, discord.CategoryChannel):
                continue  # a category holds no messages; its channels carry their own (synced) overwrites
            previous = self._seen.get(channel.id)
            if previous is not None and previous[0] is channel._overwrites:
                seen[channel.id] = previous
            else:
                seen[channel.id] = (channel._overwrites, _channel_rules(channel, admin_role_ids))
        self._seen = seen
        channels = tuple(rules for _, rules in seen.values())
        if self._last is not None and self._last.channels == channels and self._last.admin_role_ids == admin_role_ids:
            return self._last
        self._last = _ChannelsRead(
            admin_role_ids,
            channels,
            frozenset(overwrite.target_id for c in channels for overwrite in c.roles),
            tuple(sorted({overwrite.target_id for c in channels for overwrite in c.members})),
        )
        return self._last

    def read(self, guild: discord.Guild) -> GuildRules:
        """The guild's roles and overwrites as ``GuildRules``: no walk over members, only over roles and channels."""
        default = guild.default_role
        everyone_bits = read_bits(default.permissions.value)
        roles = guild.roles
        admin_role_ids = frozenset(role.id for role in roles if role.permissions.administrator)
        read = self._read_channels(guild, admin_role_ids)
        if default.permissions.administrator:
            return GuildRules(everyone_bits, everyone_is_admin=True, channels=read.channels)
        role_bits = tuple((role.id, bits) for role in roles
                          if not role.is_default() and role.id not in admin_role_ids
                          and (bits := read_bits(role.permissions.value) & ~everyone_bits))
        relevant = read.overwritten_role_ids | {role_id for role_id, _ in role_bits}
        member_roles: list[tuple[int, frozenset[int]]] = []
        exempt: set[int] = set()
        for member_id in read.overwritten_member_ids:
            member = guild.get_member(member_id)
            if member_id == guild.owner_id or (member is not None and member.guild_permissions.administrator):
                exempt.add(member_id)
            elif member is not None:
                member_roles.append((member_id, frozenset(role.id for role in member.roles) & relevant))
        return GuildRules(everyone_bits, False, role_bits, read.channels, tuple(member_roles), frozenset(exempt))


def guild_rules(guild: discord.Guild) -> GuildRules:
    """The guild's ``GuildRules``, read afresh."""
    return GuildRulesReader().read(guild)


def _base_channel(channel: discord.abc.GuildChannel | discord.Thread) -> int:
    """The channel whose readers bound a reply's audience: a thread's parent (a private thread's audience is a subset
    of its parent's readers), else the channel itself."""
    return channel.parent_id if isinstance(channel, discord.Thread) else channel.id


def audience_in(channel: discord.abc.GuildChannel | discord.Thread, shareable: frozenset[int]) -> Audience:
    """What a reply posted in ``channel`` may quote, given ``shareable`` for its base channel.

    A public thread reads as its parent does. A private thread is quoted only inside itself, and only when its
    parent's viewers all read the parent's history (thread permissions are the parent's).
    """
    threads = {thread.id for thread in channel.guild.threads
               if not thread.is_private() and thread.parent_id in shareable}
    if isinstance(channel, discord.Thread) and channel.parent_id in shareable:
        threads.add(channel.id)
    return Audience(channel_ids=shareable | threads, thread_parent_ids=shareable)


class AudienceCache:
    """``Audience`` per channel, worked out again only when the guild's rules change (roles, overwrites, channels).

    Reading the rules is a cheap pass on the event loop; the rule itself runs on a worker thread.
    """

    def __init__(self) -> None:
        self._readers: dict[int, GuildRulesReader] = {}
        self._answers: dict[int, tuple[GuildRules, dict[int, frozenset[int]]]] = {}

    async def audience(self, channel: discord.abc.GuildChannel | discord.Thread) -> Audience:
        guild = channel.guild
        where_id = _base_channel(channel)
        rules = self._readers.setdefault(guild.id, GuildRulesReader()).read(guild)
        cached = self._answers.get(guild.id)
        if cached is None or cached[0] != rules:
            cached = (rules, {})
            self._answers[guild.id] = cached
        shareable = cached[1].get(where_id)
        if shareable is None:
            shareable = await asyncio.to_thread(shareable_channel_ids, rules, where_id)
            cached[1][where_id] = shareable
            log.debug("Channel %d of guild %d may quote %d channels", where_id, guild.id, len(shareable))
        return audience_in(channel, shareable)

    def forget_guild(self, guild_id: int) -> None:
        self._readers.pop(guild_id, None)
        self._answers.pop(guild_id, None)
