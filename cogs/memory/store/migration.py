"""A named schema migration, as both stores apply and record them (one transaction each, in ``schema_migrations``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("DELETE_VECTORS_OF_EARLIER_FORMS", "SELECT_APPLIED", "Migration")

SELECT_APPLIED = "SELECT name FROM schema_migrations"
# Vectors stored under a key of an earlier input form (vectors/embedding.INPUT_FORM: the message after its
# predecessor, or the mean of that and the message alone) quote the message before: since edits and deletes no longer
# embed the next message again, a forgotten message would live on in them. No code reads them (every key names its
# form, and memory embeds the messages under today's key in the background), so both stores' migrations drop them
# (SQLite's 0012, PostgreSQL's 0008), in a restored backup too. The literal is the form of that time, on purpose.
DELETE_VECTORS_OF_EARLIER_FORMS = "DELETE FROM embeddings WHERE model NOT LIKE '%[message alone]'"


@dataclass(frozen=True, slots=True)
class Migration:
    name: str
    statements: tuple[str, ...]
