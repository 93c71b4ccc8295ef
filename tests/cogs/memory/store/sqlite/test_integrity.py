"""The database checked as it opens, on real damaged files: refused with what to do, or its keyword index rebuilt."""

from __future__ import annotations

import io
import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.store.sqlite.integrity import RESTORE_ADVICE, quick_check
from cogs.memory.store.sqlite.store import SqliteStore, NewRow, StoreOpenError, WriteBatch
from tests.fixtures.core import RecordFactory, fetchall


async def stored_store(db_path: Path, make_record: RecordFactory, count: int) -> None:
    """A closed database holding ``count`` messages about picnics."""
    store = await SqliteStore.open(db_path)
    rowids = list(store.allocate_rowids(count))
    batch = WriteBatch("test-model", guild_ids={1})
    batch.inserts = [NewRow(rowid, make_record(rowid, f"picnic number {rowid}"), f"picnic number {rowid}",
                            f"picnic number {rowid}", np.ones(8, dtype=np.float32)) for rowid in rowids]
    await store.write(batch)
    await store.close()


def damage(db_path: Path, sql: str) -> None:
    connection = sqlite3.connect(db_path, isolation_level=None)
    connection.execute(sql)
    connection.close()


async def test_a_damaged_keyword_index_is_rebuilt_from_the_messages(
    db_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await stored_store(db_path, make_record, 300)
    damage(db_path, "UPDATE messages_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    with caplog.at_level(logging.INFO):
        store = await SqliteStore.open(db_path)
    hits = await fetchall(store, "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'picnic'")
    await store.close()
    assert hits == [(300,)]
    # What the check said (another test may have left memory's loggers at INFO: the migrations' lines come too).
    said = [record.getMessage() for record in caplog.records if record.name == "cogs.memory.store.sqlite.integrity"]
    assert said[:2] == [
        f"The keyword index of {db_path} is damaged (database disk image is malformed); rebuilding it from the "
        "messages table",
        f"Keyword index of {db_path} rebuilt: 300 messages"]


async def test_keyword_rows_missing_from_the_index_are_rebuilt(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 20)
    damage(db_path, "DELETE FROM messages_fts_content WHERE id = 7")
    store = await SqliteStore.open(db_path)
    hits = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH '7'")
    await store.close()
    assert hits == [(7,)]


async def test_a_damaged_page_refuses_the_database_and_says_what_to_do(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 3000)
    connection = sqlite3.connect(db_path)
    root, page_size = connection.execute("SELECT rootpage, (SELECT page_size FROM pragma_page_size) "
                                         "FROM sqlite_master WHERE name = 'messages'").fetchone()
    connection.close()
    with open(db_path, "r+b") as file:  # the cell pointers of the messages table's root page
        file.seek((root - 1) * page_size + 12)
        file.write(b"\xff" * 64)
    with pytest.raises(StoreOpenError) as error:
        await SqliteStore.open(db_path)
    assert str(error.value).startswith(f"the memory database {db_path} is damaged (On tree page {root} ")
    assert str(error.value).endswith("problem(s) found). " + RESTORE_ADVICE.format(path=db_path))


async def test_a_file_that_is_no_database_is_refused_with_what_to_do(db_path: Path) -> None:
    db_path.write_bytes(b"these are not the bytes of a database" * 200)
    with pytest.raises(StoreOpenError) as error:
        await SqliteStore.open(db_path)
    assert str(error.value) == (f"the memory database {db_path} is damaged (file is not a database). "
                                + RESTORE_ADVICE.format(path=db_path))


async def test_a_database_path_that_is_a_folder_is_refused(db_path: Path) -> None:
    db_path.mkdir()
    with pytest.raises(StoreOpenError) as error:
        await SqliteStore.open(db_path)
    assert str(error.value) == f"{db_path} is a folder, not a database file; move it away or pass another --db"


async def test_a_database_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file where the data folder goes")
    with pytest.raises(StoreOpenError) as error:
        await SqliteStore.open(tmp_path / "data" / "memory.sqlite3")
    assert str(error.value) == (f"cannot make the folder of {tmp_path / 'data' / 'memory.sqlite3'}: "
                                f"a file is in the way of a folder ({tmp_path / 'data'})")


def test_quick_check_stops_at_its_time_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite3"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (b BLOB)")
    connection.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) "
                       "INSERT INTO t SELECT randomblob(2000) FROM n")  # 40 MB: far more than 10 ms of checking
    connection.commit()
    connection.close()
    assert (quick_check(path, budget_s=0.01).complete, quick_check(path, budget_s=None).complete) == (False, True)


async def test_a_second_process_does_not_hold_up_the_first_with_the_keyword_check(
    db_path: Path, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await stored_store(db_path, make_record, 300)
    running = await SqliteStore.open(db_path)  # the bot; the check holds the write lock, which it would wait for
    damage(db_path, "UPDATE messages_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    with caplog.at_level(logging.INFO):
        second = await SqliteStore.open(db_path)
    await second.close()
    await running.close()
    assert "rebuilding it from the messages table" not in caplog.text


async def check(db_path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(db_path), "check"]), out, err)
    return code, out.getvalue(), err.getvalue()


async def test_check_from_a_terminal_rebuilds_a_damaged_keyword_index(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 300)
    damage(db_path, "UPDATE messages_fts_data SET block = zeroblob(length(block)) WHERE id > 10")
    assert await check(db_path) == (0, (
        "the keyword index was damaged (database disk image is malformed); rebuilt it from 300 messages\n"
        f"{db_path}: no damage found\n"), "")


async def test_check_from_a_terminal_leaves_the_keyword_index_to_a_stopped_memory(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 3)
    running = await SqliteStore.open(db_path)
    try:
        result = await check(db_path)
    finally:
        await running.close()
    assert result == (0, f"{db_path}: no damage found; its keyword index is checked only while memory is stopped\n",
                      "")


async def test_check_from_a_terminal_names_the_damage_and_what_to_do(db_path: Path) -> None:
    db_path.write_bytes(b"not a database" * 500)
    assert await check(db_path) == (1, "", f"error: the memory database {db_path} is damaged (file is not a "
                                           f"database). {RESTORE_ADVICE.format(path=db_path)}\n")


async def test_check_from_a_terminal_reports_messages_missing_from_the_keyword_index(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 300)
    damage(db_path, "DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages_fts LIMIT 20)")
    damage(db_path, "INSERT INTO messages_fts (rowid, body, author) VALUES (99999, 'picnic of nobody', 'x')")
    assert await check(db_path) == (1, "", (
        f"error: the keyword index of {db_path} lacks 20 of the 300 messages and has 1 row(s) of no message: those "
        "messages cannot be found by their words; run `python -m cogs.memory check --repair` with memory "
        "stopped\n"))
    assert keyword_hits(db_path) == 281  # reported, not changed


def keyword_hits(db_path: Path) -> int:
    connection = sqlite3.connect(db_path)
    try:
        return connection.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'picnic'").fetchone()[0]
    finally:
        connection.close()


async def test_check_repair_rebuilds_the_keyword_index_so_every_message_is_found_by_its_words(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 300)
    damage(db_path, "DELETE FROM messages_fts WHERE rowid IN (SELECT rowid FROM messages_fts LIMIT 20)")
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(db_path), "check", "--repair"]), out, err)
    assert (code, out.getvalue(), err.getvalue()) == (0, (
        "the keyword index lacks 20 of the 300 messages and has 0 row(s) of no message; rebuilt it from 300 "
        f"messages\n{db_path}: no damage found\n"), "")
    store = await SqliteStore.open(db_path)
    try:
        found = await fetchall(store, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'picnic' ORDER BY rowid")
    finally:
        await store.close()
    assert [rowid for (rowid,) in found] == list(range(1, 301))


async def test_check_from_a_terminal_compares_the_keyword_rows_while_memory_runs(
    db_path: Path, make_record: RecordFactory
) -> None:
    await stored_store(db_path, make_record, 30)
    damage(db_path, "DELETE FROM messages_fts WHERE rowid = 7")
    running = await SqliteStore.open(db_path)
    try:
        result = await check(db_path)
    finally:
        await running.close()
    assert result == (1, "", f"error: the keyword index of {db_path} lacks 1 of the 30 messages and has 0 row(s) of "
                             "no message: those messages cannot be found by their words; run `python -m cogs.memory "
                             "check --repair` with memory stopped\n")
