"""Members and channels named as an admin knows them: an id, a mention, ``@name`` or ``#channel``, resolved by the core
(``cogs.memory.names``). A name is taken only where it is unambiguous; otherwise the answer is a 400 listing the
candidates, with their ids, to pick from (the page escapes it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..names import Ambiguous, Candidate, NotFound, Resolved, Sign, channels, members, resolve
from .controls import PendingForget, PendingForgets
from .params import BadParam, forget_kind, optional_id, required_id, search_request
from .source import DashboardSource, ForgetKind, ForgetPreview, SearchRequest

__all__ = ("ForgetAsked", "ask_forget", "forget_target", "resolved_channel", "resolved_member", "resolved_search")

MAX_NAME_CHARS = 100
MAX_CANDIDATES = 10


def _raw(params: Mapping[str, Any], name: str) -> str:
    value = params.get(name)
    return "" if value is None else str(value).strip()


def _name(raw: str, sign: str, other: str, field: str) -> str | None:
    """The name in ``raw`` (``sign`` before it, or none), or None when ``raw`` is an id."""
    if raw[:1] == other:
        raise BadParam(f"{field} takes {'a member' if sign == '@' else 'a channel'} ({sign}name or an id), not "
                       f"{raw[:40]!r}")
    if raw[:1] != sign and raw.isascii() and raw.isdigit():
        return None
    name = raw[1:].strip() if raw[:1] == sign else raw
    if not name or len(name) > MAX_NAME_CHARS:
        raise BadParam(f"{field} must be an id or {sign}name (at most {MAX_NAME_CHARS} characters)")
    return name


def _wanted(params: Mapping[str, Any], field: str, sign: str, other: str) -> int | str | None:
    """What ``params[field]`` asks for: None (empty), an id, or a name to look up."""
    raw = _raw(params, field)
    if not raw:
        return None
    name = _name(raw, sign, other, field)
    return optional_id(params, field) if name is None else name


def _refused(found: Ambiguous | NotFound, kind: str, sign: Sign, missing: str,
             label: Callable[[Candidate], str]) -> BadParam:
    """The 400 for a name that names no one (``missing``) or several (each ``label``led, at most ``MAX_CANDIDATES``)."""
    if isinstance(found, NotFound):
        return BadParam(missing)
    shown = ", ".join(f"{sign}{label(candidate)}" for candidate in found.candidates[:MAX_CANDIDATES])
    more = len(found.candidates) - MAX_CANDIDATES
    listed = shown + (f" and {more} more" if more > 0 else "")
    return BadParam(f"{len(found.candidates)} {kind}s are named {found.wanted!r}: {listed}. Give the id of the one "
                    "you mean")


async def resolved_member(source: DashboardSource, guild_id: int, params: Mapping[str, Any],
                          field: str) -> int | None:
    """The member ``params[field]`` names: an id (or ``<@id>``) as it is, ``@name`` (or a bare name) when one member
    of the guild wrote under it; None when the field is empty."""
    name = _wanted(params, field, "@", "#")
    if not isinstance(name, str):
        return name
    found = resolve(name, members(await source.member_names(guild_id)), "@")
    if isinstance(found, Resolved):
        return found.id
    raise _refused(found, "member", "@", f"No member named {name!r} has messages in memory in this guild; give "
                   "their id", lambda member: f"{member.name} (id {member.id}, {member.messages} messages)")


async def resolved_channel(source: DashboardSource, guild_id: int, params: Mapping[str, Any],
                           field: str) -> int | None:
    """The channel ``params[field]`` names: an id (or ``<#id>``) as it is, ``#name`` (or a bare name) when one
    channel or thread of the guild carries it (by the names memory last saw); None when the field is empty."""
    name = _wanted(params, field, "#", "@")
    if not isinstance(name, str):
        return name
    found = resolve(name, channels(await source.channel_names(guild_id)), "#")
    if isinstance(found, Resolved):
        return found.id
    raise _refused(found, "channel", "#", f"No channel named {name!r} is known in this guild; give its id (Browse "
                   "lists them)", lambda channel: f"{channel.name} (id {channel.id})")


async def forget_target(source: DashboardSource, kind: ForgetKind, guild_id: int, params: Mapping[str, Any],
                        field: str) -> int:
    """What a forget of ``kind`` aims at: the guild itself, a message id, a member or a channel (named or by id)."""
    if kind == "guild":
        return guild_id
    if kind == "message":
        target = optional_id(params, field)
    elif kind == "member":
        target = await resolved_member(source, guild_id, params, field)
    else:
        target = await resolved_channel(source, guild_id, params, field)
    if target is None:
        raise BadParam(f"{field} is required")
    return target


@dataclass(frozen=True, slots=True)
class ForgetAsked:
    """A forget waiting for its confirmation, and what it would take now."""

    pending_id: str
    pending: PendingForget
    preview: ForgetPreview


async def ask_forget(source: DashboardSource, pending: PendingForgets, session: str, params: Mapping[str, Any],
                     guild_field: str, target_field: str) -> ForgetAsked:
    """A forget asked for by the page's form or the API's body: its target resolved, what it takes read, and a
    confirmation waiting for ``session`` alone."""
    kind, guild_id = forget_kind(params), required_id(params, guild_field)
    target_id = await forget_target(source, kind, guild_id, params, target_field)
    preview = await source.forget_preview(kind, guild_id, target_id)
    pending_id, waiting = pending.add(session, kind, guild_id, target_id)
    return ForgetAsked(pending_id, waiting, preview)


async def resolved_search(source: DashboardSource, params: Mapping[str, Any]) -> SearchRequest | None:
    """The search asked for, its channel and author filters named or by id; None when no query was given."""
    if not _raw(params, "q"):
        return None
    wanted = search_request({key: value for key, value in params.items() if key not in ("channel", "author")})
    if wanted is None:
        return None
    channel = await resolved_channel(source, wanted.guild_id, params, "channel")
    author = await resolved_member(source, wanted.guild_id, params, "author")
    return SearchRequest(query=wanted.query, guild_id=wanted.guild_id, channel_id=channel, author_id=author,
                         after=wanted.after, before=wanted.before, limit=wanted.limit, rerank=wanted.rerank)
