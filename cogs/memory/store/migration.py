"""A named schema migration, as both stores apply and record them (one transaction each, in ``schema_migrations``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("SELECT_APPLIED", "Migration")

SELECT_APPLIED = "SELECT name FROM schema_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    statements: tuple[str, ...]
