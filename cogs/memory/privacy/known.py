"""Every erasure memory knows of, from its two independent records: the erasure ledger's file (ledger.py) and the
database's ``erasures`` table (the entries it applied). Neither alone is trusted to survive: a ledger deleted or
damaged is written again from the database as memory opens (``reconcile``), and a restore asks ``erasures_known``
for both records of the database it replaces, so that the ledger holds every erasure before the older file goes in.

``erasures_known`` is synchronous, for the SQLite restore, which runs with memory stopped; it reads the closed SQLite
file through store/sqlite/restore_erasures.py (``noted_erasures``: the ``erasures`` the database applied and the
``erasures_to_apply`` a restore left in it), as the store's own read needs an open store.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..store.sqlite.restore_erasures import erasures_to_apply, noted_erasures
from .ledger import (Erasure, ErasureLedger, LedgerReading, damaged_path, read_ledger, rewrite_ledger,
                     why_not_written)

__all__ = ("AppliedErasures", "ErasuresUnreadable", "KnownErasures", "known_at_open", "erasures_for_restore", "erasures_known", "keep_in_ledger",
           "keep_restored_erasures", "reconcile")

log = logging.getLogger(__name__)



class AppliedErasures(Protocol):
    """The database's record of the erasures it applied, read only (both stores' ``ErasureRecords.erasures``)."""

    async def erasures(self) -> dict[str, str]: ...


class ErasuresUnreadable(RuntimeError):
    """Memory cannot start: the erasure ledger or the database's erasures cannot be read (or the ledger written with
    what a restore left to apply); the message says which, and what to do."""


@dataclass(frozen=True, slots=True)
class KnownErasures:
    """What the two records hold together: every erasure, in time order, and those the database has not applied."""

    entries: tuple[Erasure, ...]
    unapplied: tuple[Erasure, ...]


def _database_entries(recorded: Mapping[str, str]) -> tuple[dict[str, Erasure], int]:
    """The database's entries by id, and how many of its rows fail to parse or their checksum (left out)."""
    entries: dict[str, Erasure] = {}
    bad = 0
    for erasure_id, entry in recorded.items():
        try:
            erasure = Erasure.from_json(entry)
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        entries[erasure_id] = erasure
    return entries, bad


def _union(ledger: Iterable[Erasure], database: Iterable[Erasure]) -> list[Erasure]:
    """One entry per id (the ledger's where both hold it: the same, checksums tell), in time order."""
    merged: dict[str, Erasure] = {}
    for erasure in (*ledger, *database):
        merged.setdefault(erasure.id, erasure)
    return sorted(merged.values(), key=lambda erasure: erasure.at)


async def reconcile(ledger: ErasureLedger, records: AppliedErasures) -> KnownErasures:
    """Make the ledger hold every erasure either record knows, before anything reads the database.

    The ledger is read and verified; what the database applied and the ledger lacks (a file deleted, a damaged line, a
    delete it could not record) is written back into it, in one atomic rewrite that also drops damaged lines (kept
    beside it, ``.damaged``) and gives older lines their checksum. A missing or damaged ledger is one WARNING with
    the counts; the next open, the ledger clean, says nothing. A rewrite that fails (a full disk) is one WARNING
    instead, not a failure: the database still holds every erasure. Raises OSError when the ledger cannot be read,
    and the store's error when its table cannot.
    """
    reading = await ledger.examine()
    recorded = await records.erasures()
    database, bad = _database_entries(recorded)
    if bad:
        log.warning("%d entries of the database's erasures table are damaged (not whole, or their checksum fails); "
                    "the erasure ledger %s is read instead for them", bad, ledger.path)
    held = {erasure.id for erasure in reading.entries}
    copied = [erasure for erasure_id, erasure in database.items() if erasure_id not in held]
    entries = _union(reading.entries, copied)
    unapplied = tuple(erasure for erasure in entries if erasure.id not in recorded)
    if copied or not reading.clean or len(entries) < len(reading.entries):
        try:
            await ledger.rewrite(entries, reading.damaged)
        except OSError as error:
            lacking = "it was missing" if reading.missing else (
                f"damaged: {reading.damage()}" if reading.damaged else f"it lacked {len(copied)} erasure(s)")
            log.warning("Could not write the erasure ledger %s again (%s; %s). Memory starts, as the database holds "
                        "every erasure, but until it is written a restored older database could bring back what "
                        "they erased: free some space (or make it writable) and start again", ledger.path,
                        why_not_written(error), lacking)
        else:
            _say_what_was_rebuilt(ledger, reading, len(copied))
    return KnownErasures(tuple(entries), unapplied)


def _say_what_was_rebuilt(ledger: ErasureLedger, reading: LedgerReading, copied: int) -> None:
    """One line for what the rewrite mends: loud for a missing or damaged ledger, quiet for routine catching up."""
    if reading.missing:
        log.warning("The erasure ledger %s was missing: rebuilt it from the database's %d erasures (a backup restored "
                    "while it was gone could have brought back what they erased)", ledger.path, copied)
    elif reading.damaged:
        log.warning("The erasure ledger %s had %d damaged line(s): %s. Rebuilt it: %d erasure(s) copied back from "
                    "the database; the damaged lines are kept in %s", ledger.path, len(reading.damaged),
                    reading.damage(), copied, damaged_path(ledger.path))
    elif copied:  # another process's erasures (one PostgreSQL), or deletes a full disk kept out of the ledger
        log.info("Copied %d erasures the database holds into the erasure ledger %s", copied, ledger.path)
    elif reading.unsummed:
        log.info("Gave %d lines of the erasure ledger %s their checksum", reading.unsummed, ledger.path)


def erasures_known(ledger_path: Path, db_path: Path) -> list[Erasure]:
    """Every erasure the ledger at ``ledger_path`` or the SQLite database at ``db_path`` knows, one per id, in time
    order: the ledger's lines verified (a damaged line is left out; the database's copy of it stands in), and the
    rows of the database's ``erasures`` table.

    For a restore, before it swaps the database at ``db_path`` for an older one: it hands this to
    ``keep_in_ledger`` (so the ledger holds what the replaced database knew), and the restored database applies every
    one it lacks as memory next opens (``Erasures.reapply``). A missing ledger or database, or a database older than
    the table, knows none. A database that cannot be read (the damage a restore mends) is one WARNING and the ledger
    alone answers. Raises OSError when the ledger is there but cannot be read.
    """
    reading = read_ledger(ledger_path)
    try:
        recorded = noted_erasures(db_path)
    except sqlite3.Error as error:
        log.warning("Could not read the erasures of the database %s (%s); the erasure ledger %s alone says what was "
                    "erased", db_path, error, ledger_path)
        recorded = {}
    return _union(reading.entries, _database_entries(recorded)[0].values())


def keep_in_ledger(ledger_path: Path, erasures: Iterable[Erasure]) -> int:
    """Write into the ledger at ``ledger_path`` each of ``erasures`` it lacks (one atomic rewrite, damaged lines set
    aside; nothing written when it holds them all and is clean); returns how many it lacked. Raises OSError when the
    ledger cannot be read or written: a restore must then not go on, or it could bring back what they erased."""
    reading = read_ledger(ledger_path)
    held = {erasure.id for erasure in reading.entries}
    lacking = [erasure for erasure in erasures if erasure.id not in held]
    if lacking or not reading.clean:
        rewrite_ledger(ledger_path, _union(reading.entries, lacking), reading.damaged)
    return len({erasure.id for erasure in lacking})


def erasures_for_restore(ledger_path: Path, db_path: Path) -> dict[str, str]:
    """What a restore replacing ``db_path`` must keep erased (id -> entry), once the ledger holds it all: the restore
    leaves these in the incoming copy to apply as memory next opens. Raises OSError when the ledger cannot be read
    or written (the restore must then not go on)."""
    known = erasures_known(ledger_path, db_path)
    keep_in_ledger(ledger_path, known)
    return {erasure.id: erasure.to_json() for erasure in known}


def keep_restored_erasures(ledger_path: Path, db_path: Path) -> int:
    """As memory opens on a SQLite file: the erasures a restore left in it to apply go into the ledger if it lacks
    them (a ledger lost since the restore), so that applying the ledger again applies them too; those the database
    has applied since leave its table (store/sqlite/restore_erasures.py). Returns how many the ledger lacked."""
    try:
        held = erasures_to_apply(db_path)
    except sqlite3.Error as error:
        log.warning("Could not read what a restore left to apply in %s (%s)", db_path, error)
        return 0
    return keep_in_ledger(ledger_path, _database_entries(held)[0].values()) if held else 0


async def known_at_open(ledger: ErasureLedger, records: AppliedErasures, db_path: Path | None) -> KnownErasures:
    """As memory opens, before anything reads: what a restore left to apply in the SQLite file at ``db_path`` (None
    on PostgreSQL) joins the ledger, then the ledger and the database are merged (``reconcile``). Raises
    ErasuresUnreadable when either cannot be read, or the ledger cannot hold what a restore left to apply."""
    if db_path is not None:
        try:
            await asyncio.to_thread(keep_restored_erasures, ledger.path, db_path)
        except OSError as exc:
            raise ErasuresUnreadable(f"the erasures a restore left to apply cannot be written to the erasure ledger "
                                     f"{ledger.path} ({exc}); free some space or make it writable, and start "
                                     f"again") from None
    try:
        return await reconcile(ledger, records)
    except (OSError, sqlite3.Error) as exc:
        raise ErasuresUnreadable(f"reading the erasure ledger {ledger.path} or the database's erasures failed "
                                 f"({type(exc).__name__}: {exc}); fix that and start again") from None
