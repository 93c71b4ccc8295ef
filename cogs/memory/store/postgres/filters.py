"""A search's filters as PostgreSQL: the same clause as filters.py, with numbered parameters and id arrays."""

from __future__ import annotations

from typing import Any

from ...records import SearchFilters
from ..rows import to_timestamp

__all__ = ("filter_clause",)


def filter_clause(filters: SearchFilters, first: int = 1, alias: str = "m") -> tuple[str, list[Any]]:
    """A WHERE clause over ``messages AS {alias}`` whose parameters are numbered from ``$first``."""
    clauses: list[str] = []
    params: list[Any] = []

    def param(value: Any) -> str:
        params.append(value)
        return f"${first + len(params) - 1}"

    in_guild = f"{alias}.guild_id = {param(filters.guild_id)}"
    if filters.allowed_channel_ids is None:
        clauses.append(in_guild)
    else:
        in_allowed = f"{alias}.channel_id = ANY({param(sorted(filters.allowed_channel_ids))}::bigint[])"
        if not filters.public_thread_parent_ids:
            clauses += [in_guild, in_allowed]
        else:
            # An archived public thread is readable through its parent; a private one only by its own id.
            parents = param(sorted(filters.public_thread_parent_ids))
            in_public_thread = f"{alias}.parent_channel_id = ANY({parents}::bigint[]) AND NOT {alias}.private_thread"
            clauses.append(f"{in_guild} AND ({in_allowed} OR ({in_public_thread}))")
    if filters.channel_ids is not None:
        clauses.append(f"{alias}.channel_id = ANY({param(sorted(filters.channel_ids))}::bigint[])")
    if filters.author_ids is not None:
        clauses.append(f"{alias}.author_id = ANY({param(sorted(filters.author_ids))}::bigint[])")
    if filters.after is not None:
        clauses.append(f"{alias}.created_at > {param(to_timestamp(filters.after))}")
    if filters.before is not None:
        clauses.append(f"{alias}.created_at < {param(to_timestamp(filters.before))}")
    if filters.exclude_message_ids:
        clauses.append(f"NOT ({alias}.message_id = ANY({param(sorted(filters.exclude_message_ids))}::bigint[]))")
    return " AND ".join(clauses), params
