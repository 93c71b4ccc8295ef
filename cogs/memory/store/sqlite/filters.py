"""A search's filters as SQL: the WHERE clause every step of a search, and the store, read messages through."""

from __future__ import annotations

import json
from typing import Any

from ...records import SearchFilters
from ..rows import to_timestamp

__all__ = ("filter_clause",)


def filter_clause(filters: SearchFilters, alias: str = "m") -> tuple[str, list[Any]]:
    """A parameterised WHERE clause over ``messages AS {alias}`` for ``filters``."""
    clauses, params = _guild_clause(filters, alias)

    def ids_in(column: str, ids: frozenset[int], negate: bool = False) -> None:
        # A JSON array keeps the statement's parameter count fixed however many ids there are.
        clauses.append(f"{alias}.{column} {'NOT ' if negate else ''}IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(sorted(ids)))

    if filters.channel_ids is not None:
        ids_in("channel_id", filters.channel_ids)
    if filters.author_ids is not None:
        ids_in("author_id", filters.author_ids)
    if filters.after is not None:
        clauses.append(f"{alias}.created_at > ?")
        params.append(to_timestamp(filters.after))
    if filters.before is not None:
        clauses.append(f"{alias}.created_at < ?")
        params.append(to_timestamp(filters.before))
    if filters.exclude_message_ids:
        ids_in("message_id", filters.exclude_message_ids, negate=True)
    return " AND ".join(clauses), params


def _guild_clause(filters: SearchFilters, alias: str) -> tuple[list[str], list[Any]]:
    """The guild and, where set, the channels and threads the caller may read."""
    in_guild = f"{alias}.guild_id = ?"
    if filters.allowed_channel_ids is None:
        return [in_guild], [filters.guild_id]
    in_allowed = f"{alias}.channel_id IN (SELECT value FROM json_each(?))"
    allowed = json.dumps(sorted(filters.allowed_channel_ids))
    if not filters.public_thread_parent_ids:
        return [in_guild, in_allowed], [filters.guild_id, allowed]
    # An archived thread has left Discord's cache, so its id is not in allowed_channel_ids; a public one is still
    # readable through its parent. A private thread passes only by its own (cached) id. The guild test sits in each
    # branch, not beside the OR: then SQLite reads each branch through its own index (a MULTI-INDEX OR) instead of
    # every row of the guild.
    in_public_thread = f"{alias}.parent_channel_id IN (SELECT value FROM json_each(?)) AND {alias}.private_thread = 0"
    parents = json.dumps(sorted(filters.public_thread_parent_ids))
    clause = f"(({in_guild} AND {in_allowed}) OR ({in_guild} AND {in_public_thread}))"
    return [clause], [filters.guild_id, allowed, filters.guild_id, parents]
