"""The two records of erasures (the ledger's file, the database's table) merged: as memory opens (``reconcile``, on a
fake of the database's record) and before a restore (``erasures_known`` and ``keep_in_ledger``, on a real SQLite
file). A missing or damaged ledger is rebuilt from the database with one warning, and the next open says nothing."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from cogs.memory.privacy.known import erasures_known, keep_in_ledger, reconcile
from cogs.memory.privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger, damaged_path, read_ledger
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.ledger import change_a_byte, fill_the_disk, tear_last_line

FIRST, SECOND, THIRD = (Erasure("forget", guild_id=1, message_ids=(m,), at=float(m), id=f"e{m}")
                        for m in (1111, 2222, 3333))


class Recorded:
    """The database's record of the erasures it applied: id → entry."""

    def __init__(self, *erasures: Erasure) -> None:
        self.rows = {erasure.id: erasure.to_json() for erasure in erasures}

    async def erasures(self) -> dict[str, str]:
        return dict(self.rows)


def write(path: Path, *erasures: Erasure) -> None:
    path.write_text("".join(erasure.to_json() + "\n" for erasure in erasures))


def said(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= level]


async def test_a_missing_ledger_is_rebuilt_from_the_database_with_one_warning_then_nothing_is_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    with caplog.at_level(logging.INFO):
        known = await reconcile(ledger, Recorded(SECOND, FIRST))
        [warning] = said(caplog)
        caplog.clear()
        await reconcile(ledger, Recorded(SECOND, FIRST))
    assert warning.startswith(f"The erasure ledger {ledger.path} was missing: rebuilt it from the database's 2 ")
    assert (known.entries, known.unapplied, said(caplog, logging.INFO)) == ((FIRST, SECOND), (), [])
    assert read_ledger(ledger.path).entries == (FIRST, SECOND)


async def test_a_missing_ledger_and_no_erasures_say_nothing_and_write_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        known = await reconcile(ErasureLedger(tmp_path / LEDGER_NAME), Recorded())
    assert (known.entries, said(caplog, logging.INFO), list(tmp_path.iterdir())) == ((), [], [])


async def test_a_torn_last_line_is_named_once_and_the_ledger_mended_from_the_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    write(ledger.path, FIRST, SECOND)
    tear_last_line(ledger.path)
    with caplog.at_level(logging.INFO):
        await reconcile(ledger, Recorded(FIRST, SECOND))
        [warning] = said(caplog)
        caplog.clear()
        await reconcile(ledger, Recorded(FIRST, SECOND))
    assert warning == (f"The erasure ledger {ledger.path} had 1 damaged line(s): line 2 (cut short). Rebuilt it: 1 "
                       f"erasure(s) copied back from the database; the damaged lines are kept in "
                       f"{damaged_path(ledger.path)}")
    assert (said(caplog, logging.INFO), read_ledger(ledger.path).entries) == ([], (FIRST, SECOND))


async def test_a_byte_changed_in_a_middle_line_is_named_and_the_databases_copy_stands_in(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The changed line would forget message 2232 in place of 2222: it is not applied, the database's copy is."""
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    write(ledger.path, FIRST, SECOND, THIRD)
    change_a_byte(ledger.path, 2, b"2222", b"2232")
    with caplog.at_level(logging.WARNING):
        known = await reconcile(ledger, Recorded(SECOND))
    [warning] = said(caplog)
    assert "1 damaged line(s): line 2 (checksum does not match)" in warning
    assert (known.entries, known.unapplied) == ((FIRST, SECOND, THIRD), (FIRST, THIRD))
    assert read_ledger(ledger.path).entries == (FIRST, SECOND, THIRD)
    assert b"2232" in damaged_path(ledger.path).read_bytes()


async def test_lines_written_before_checksums_get_one_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    fields = json.loads(FIRST.to_json())
    del fields["sum"]
    ledger.path.write_text(json.dumps(fields) + "\n")
    with caplog.at_level(logging.INFO):
        known = await reconcile(ledger, Recorded())
    assert (said(caplog), known.unapplied) == ([], (FIRST,))
    assert '"sum":' in ledger.path.read_text() and read_ledger(ledger.path).clean


async def test_a_ledger_that_cannot_be_written_again_is_a_warning_not_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    write(ledger.path, FIRST)
    fill_the_disk(monkeypatch)
    with caplog.at_level(logging.WARNING):
        known = await reconcile(ledger, Recorded(FIRST, SECOND))
    assert known.entries == (FIRST, SECOND) and read_ledger(ledger.path).entries == (FIRST,)
    [warning] = said(caplog)
    assert warning.startswith(f"Could not write the erasure ledger {ledger.path} again (the disk is full; it lacked "
                              "1 erasure(s)). Memory starts, as the database holds every erasure")


# -- before a restore: both records of the database it replaces -------------------------------------------------


async def database_holding(db_path: Path, *erasures: Erasure) -> Path:
    store = await SqliteStore.open(db_path)
    try:
        for erasure in erasures:
            await store.record_erasure(erasure.id, erasure.at, erasure.to_json())
    finally:
        await store.close()
    return db_path


async def test_erasures_known_is_the_union_of_the_ledger_and_the_databases_table(tmp_path: Path) -> None:
    ledger = tmp_path / LEDGER_NAME
    write(ledger, FIRST, THIRD)
    db_path = await database_holding(tmp_path / "memory.sqlite3", SECOND, THIRD)
    assert erasures_known(ledger, db_path) == [FIRST, SECOND, THIRD]


async def test_erasures_known_takes_the_databases_copy_of_a_damaged_line(tmp_path: Path) -> None:
    ledger = tmp_path / LEDGER_NAME
    write(ledger, FIRST, SECOND, THIRD)
    change_a_byte(ledger, 2, b"2222", b"2232")
    tear_last_line(ledger)
    db_path = await database_holding(tmp_path / "memory.sqlite3", SECOND, THIRD)
    assert erasures_known(ledger, db_path) == [FIRST, SECOND, THIRD]


async def test_erasures_known_with_no_ledger_is_the_databases(tmp_path: Path) -> None:
    db_path = await database_holding(tmp_path / "memory.sqlite3", FIRST)
    assert erasures_known(tmp_path / LEDGER_NAME, db_path) == [FIRST]


def test_erasures_known_with_no_database_or_no_table_is_the_ledgers(tmp_path: Path) -> None:
    ledger = tmp_path / LEDGER_NAME
    write(ledger, FIRST)
    older = tmp_path / "older.sqlite3"
    sqlite3.connect(older).execute("CREATE TABLE messages (id INTEGER)").connection.close()
    assert erasures_known(ledger, tmp_path / "none.sqlite3") == erasures_known(ledger, older) == [FIRST]


def test_a_database_that_cannot_be_read_leaves_the_ledger_to_answer_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = tmp_path / LEDGER_NAME
    write(ledger, FIRST)
    damaged = tmp_path / "memory.sqlite3"
    damaged.write_bytes(b"not a database at all" * 100)
    with caplog.at_level(logging.WARNING):
        assert erasures_known(ledger, damaged) == [FIRST]
    assert said(caplog)[0].startswith(f"Could not read the erasures of the database {damaged}")


async def test_keep_in_ledger_writes_what_the_ledger_lacks_once(tmp_path: Path) -> None:
    ledger = tmp_path / LEDGER_NAME
    write(ledger, FIRST)
    db_path = await database_holding(tmp_path / "memory.sqlite3", SECOND)
    known = erasures_known(ledger, db_path)
    assert keep_in_ledger(ledger, known) == 1
    inode = ledger.stat().st_ino
    assert (keep_in_ledger(ledger, known), ledger.stat().st_ino) == (0, inode)  # nothing lacking: not rewritten
    assert read_ledger(ledger).entries == (FIRST, SECOND)
