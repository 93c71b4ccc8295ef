"""As a restore reads them: every erasure a surviving record knows (the ledger's, the database's applied ones, and
those a restore left in it to apply), each once; and the ledger made to hold those it lacks."""

from __future__ import annotations

from pathlib import Path

from cogs.memory.privacy.known import erasures_known, keep_in_ledger
from cogs.memory.privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger
from cogs.memory.store.sqlite.restore_erasures import hold_erasures
from cogs.memory.store.sqlite.store import SqliteStore

IN_LEDGER = Erasure("forget", guild_id=1, message_ids=(1,), at=30.0, id="a")
IN_BOTH = Erasure("deleted", message_ids=(2,), at=10.0, id="b")
APPLIED = Erasure("forget", guild_id=1, channel_id=10, until=20.0, at=20.0, id="c")
TO_APPLY = Erasure("opt_out", guild_id=1, author_id=100, at=40.0, id="d")


async def test_the_union_of_the_ledger_and_the_database_each_once_oldest_first(tmp_path: Path) -> None:
    db, ledger = tmp_path / "memory.sqlite3", tmp_path / LEDGER_NAME
    store = await SqliteStore.open(db)
    try:
        for erasure in (IN_BOTH, APPLIED):
            await store.record_erasure(erasure.id, erasure.at, erasure.to_json())
    finally:
        await store.close()
    hold_erasures(db, {TO_APPLY.id: TO_APPLY.to_json(), APPLIED.id: APPLIED.to_json()})
    await ErasureLedger(ledger).append(IN_LEDGER, IN_BOTH)
    assert erasures_known(ledger, db) == [IN_BOTH, APPLIED, IN_LEDGER, TO_APPLY]


def test_with_neither_record_nothing_is_known(tmp_path: Path) -> None:
    assert erasures_known(tmp_path / LEDGER_NAME, tmp_path / "memory.sqlite3") == []


async def test_the_ledger_gains_only_what_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_NAME
    await ErasureLedger(path).append(IN_LEDGER)
    added = keep_in_ledger(path, [IN_LEDGER, APPLIED])
    again = keep_in_ledger(path, [IN_LEDGER, APPLIED])
    # The ledger is rewritten in time order (ledger.py's atomic rewrite): what it holds, not where, is the point.
    assert (added, again, await ErasureLedger(path).read()) == (1, 0, [APPLIED, IN_LEDGER])
