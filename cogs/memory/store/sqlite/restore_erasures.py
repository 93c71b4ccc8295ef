"""What a restore found erased, held in the restored file until memory applies it: the ``erasures_to_apply`` table.

A restore reads every erasure a surviving record knows (the ledger, the replaced database) and writes those the
backup has not applied into the incoming copy; as memory next opens they go into the erasure ledger (if it lacks
them) and are applied with the rest of it before anything reads, so a ledger lost between the restore and that open
cannot bring them back. A row stays until the ``erasures`` table notes its erasure as applied.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

__all__ = ("erasures_to_apply", "hold_erasures", "noted_erasures")

# Outside the migrations: a backup from any version can take it, and an open of any version ignores it.
CREATE_TO_APPLY = "CREATE TABLE IF NOT EXISTS erasures_to_apply (id TEXT PRIMARY KEY, entry TEXT NOT NULL)"
INSERT_TO_APPLY = "INSERT OR IGNORE INTO erasures_to_apply (id, entry) VALUES (?, ?)"
SELECT_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('erasures', 'erasures_to_apply')"
SELECT_NOTED = "SELECT id, entry FROM erasures"
SELECT_TO_APPLY = "SELECT id, entry FROM erasures_to_apply"
SELECT_NOTED_IDS = "SELECT id FROM erasures"
PRUNE_APPLIED = "DELETE FROM erasures_to_apply WHERE id IN (SELECT id FROM erasures)"
COUNT_TO_APPLY = "SELECT COUNT(*) FROM erasures_to_apply"
DROP_TO_APPLY = "DROP TABLE erasures_to_apply"
BUSY_TIMEOUT = "PRAGMA busy_timeout = 5000"
SECURE_DELETE = "PRAGMA secure_delete = ON"


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute(SELECT_TABLES)}


def noted_erasures(db_path: Path) -> dict[str, str]:
    """Erasure id → its ledger entry (JSON), for every erasure the database at ``db_path`` knows: applied (its
    ``erasures`` table) or held to apply (a restore's). Empty when there is no such file or table."""
    if not db_path.is_file():
        return {}
    connection = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        connection.execute(BUSY_TIMEOUT)
        tables = _tables(connection)
        known: dict[str, str] = {}
        if "erasures_to_apply" in tables:
            known.update(connection.execute(SELECT_TO_APPLY).fetchall())
        if "erasures" in tables:
            known.update(connection.execute(SELECT_NOTED).fetchall())
        return known
    finally:
        connection.close()


def hold_erasures(db_path: Path, entries: Mapping[str, str]) -> int:
    """Write into the database at ``db_path`` (the incoming copy, not yet live) each of ``entries`` it has not
    applied; returns how many it holds to apply."""
    connection = sqlite3.connect(db_path, isolation_level=None)
    try:
        applied: set[str] = set()
        if "erasures" in _tables(connection):  # a backup from before the erasures table has applied none
            applied = {row[0] for row in connection.execute(SELECT_NOTED_IDS)}
        held = [(erasure_id, entry) for erasure_id, entry in entries.items() if erasure_id not in applied]
        if held:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute(CREATE_TO_APPLY)
            connection.executemany(INSERT_TO_APPLY, held)
            connection.execute("COMMIT")
        return len(held)
    finally:
        connection.close()


def erasures_to_apply(db_path: Path) -> dict[str, str]:
    """The erasures a restore left in the database at ``db_path`` that it has not applied yet (id → entry); those
    it has applied are dropped from the table, and the table once empty. Call it with the store open (migrated)."""
    connection = sqlite3.connect(db_path, isolation_level=None)
    try:
        connection.execute(BUSY_TIMEOUT)
        tables = _tables(connection)
        if "erasures_to_apply" not in tables:
            return {}
        connection.execute(SECURE_DELETE)
        if "erasures" in tables:
            connection.execute(PRUNE_APPLIED)
        if not connection.execute(COUNT_TO_APPLY).fetchone()[0]:
            connection.execute(DROP_TO_APPLY)
            return {}
        return dict(connection.execute(SELECT_TO_APPLY).fetchall())
    finally:
        connection.close()
