"""Every erasure a surviving record knows, so that no restore brings back what any of them says was erased: the
erasure ledger's entries, and the SQLite database's own (its ``erasures`` table, and what a restore left in it to
apply). A restore makes the ledger hold them all before it swaps the file; memory's open does the same with what
the restored file holds, before it applies the ledger again.

(The restore's minimal version of ``erasures_known``: the ledger's own reading, checksums and all, is ledger.py's.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from ..store.sqlite.restore_erasures import erasures_to_apply, noted_erasures
from .ledger import Erasure, ErasureLedger

__all__ = ("erasures_for_restore", "erasures_known", "keep_in_ledger", "keep_restored_erasures")

log = logging.getLogger(__name__)


def _parsed(entries: Iterable[str], where: Path) -> list[Erasure]:
    erasures: list[Erasure] = []
    unreadable = 0
    for entry in entries:
        try:
            erasures.append(Erasure.from_json(entry))
        except (ValueError, KeyError, TypeError):
            unreadable += 1
    if unreadable:
        log.warning("Skipped %d unreadable erasure(s) recorded in %s", unreadable, where)
    return erasures


def _ledger_entries(ledger: ErasureLedger) -> list[Erasure]:
    # The ledger's own reading and writing, without its event-loop lock: a restore and memory's open are the only
    # writers then (a restore holds the database alone; an open writes before any forget can run).
    return ledger._read()


def erasures_known(ledger_path: Path, db_path: Path) -> list[Erasure]:
    """The union of the erasures the ledger at ``ledger_path`` holds and those the SQLite database at ``db_path``
    knows (applied, or held to apply by a restore), each once, oldest first. Either may be missing."""
    union = {erasure.id: erasure for erasure in _parsed(noted_erasures(db_path).values(), db_path)}
    union.update((erasure.id, erasure) for erasure in _ledger_entries(ErasureLedger(ledger_path)))
    return sorted(union.values(), key=lambda erasure: (erasure.at, erasure.id))


def keep_in_ledger(ledger_path: Path, erasures: Iterable[Erasure]) -> int:
    """Append to the ledger each of ``erasures`` it lacks, on disk before this returns; returns how many."""
    erasures = list(erasures)
    if not erasures:  # the usual open: the ledger is not read twice
        return 0
    ledger = ErasureLedger(ledger_path)
    have = {erasure.id for erasure in _ledger_entries(ledger)}
    missing = [erasure for erasure in erasures if erasure.id not in have]
    if missing:
        ledger._append("".join(erasure.to_json() + "\n" for erasure in missing))
        log.warning("The erasure ledger %s lacked %d erasure(s) the database knew; added them", ledger_path,
                    len(missing))
    return len(missing)


def erasures_for_restore(ledger_path: Path, db_path: Path) -> dict[str, str]:
    """What a restore replacing ``db_path`` must keep erased (id -> ledger entry), once the ledger holds it all."""
    known = erasures_known(ledger_path, db_path)
    keep_in_ledger(ledger_path, known)
    return {erasure.id: erasure.to_json() for erasure in known}


def keep_restored_erasures(ledger_path: Path, db_path: Path) -> int:
    """As memory opens: the erasures a restore left in the database to apply go into the ledger if it lacks them
    (a ledger lost since the restore), so that applying the ledger again applies them too."""
    return keep_in_ledger(ledger_path, _parsed(erasures_to_apply(db_path).values(), db_path))
