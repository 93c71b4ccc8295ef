"""``python -m cogs.memory migrate --to postgresql://…``: a real SQLite memory copied into a real PostgreSQL."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sqlite3
from pathlib import Path

import asyncpg
import numpy as np
import pytest

from cogs.memory.__main__ import parse_args, run
from cogs.memory.store.postgres.backend import PostgresBackend
from cogs.memory.store.history import Exclusion
from cogs.memory.store.sqlite.history import SqliteHistory
from cogs.memory.store.postgres import migrate as pg_migrate
from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.store.rows import PlaceName, WriteBatch
from cogs.memory.store.sqlite.store import SqliteStore
from cogs.memory.runtime.config import PROFILE_CHOICE_PATH
from cogs.memory.vectors.embedding import EmbeddingService, vector_key
from cogs.memory.memory import Memory
from cogs.memory.runtime.profile import MemoryProfile
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import MODEL, insert, unit

# A member forgotten in guild 1.
FORGOTTEN = Exclusion(1, author_id=7, until=1_700_000_000.0)
OTHER_MODEL = "other-model"
NAMES = [PlaceName(1, "guild", 1, "Harbour Club", seen_at=1_700_000_000.0),
         PlaceName(1, "channel", 11, "winter repairs", parent_id=10, seen_at=1_700_000_001.0)]


@pytest.fixture
async def sqlite_memory(tmp_path: Path, make_record: RecordFactory) -> Path:
    """Three messages in two guilds with MODEL vectors, one more with another model's, settings, opt-out, tombstone,
    a history exclusion, guild 1's name and a thread's, a quotation of message 1, a member's export and a Performance
    minute."""
    path = tmp_path / "memory.sqlite3"
    store = await SqliteStore.open(path)
    try:
        await insert(store, make_record(1, "the quick brown fox"), make_record(2, "jumps over"),
                     make_record(3, "the lazy dog", guild_id=2, author_name="bob"))
        await insert(store, make_record(4, "written by another model"), model=OTHER_MODEL)
        await store.set_guild_setting(1, "retention_days", 30)
        await store.set_opt_out(2, 200, True)
        await store.write(WriteBatch(MODEL, tombstones=[99], deleted_at=1_700_000_000.0))
        await SqliteHistory(store, asyncio.Lock()).exclude(FORGOTTEN)
        await store.write_place_names(NAMES)
    finally:
        await store.close()
    with sqlite3.connect(path) as connection:  # a quotation, a member's export, a Performance minute
        connection.execute("INSERT INTO quotations VALUES (1, 1, 100, 10, 1700000000.0, 'answer', 10, 555)")
        connection.execute("INSERT INTO member_exports VALUES (1, 100, 1700000100.0)")
        connection.execute("INSERT INTO performance_minutes VALUES ('bot', 28333333.0, '{}')")
    return path


@pytest.fixture
def migrate_cli(sqlite_memory: Path, database_url: str):
    async def call(*extra: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        args = parse_args(["--db", str(sqlite_memory), "migrate", "--to", database_url, "--model", MODEL, *extra])
        code = await run(args, out, err)
        return code, out.getvalue(), err.getvalue()

    return call


async def fetch(url: str, sql: str, *params: object) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetch(sql, *params)
    finally:
        await conn.close()


COUNTS_TABLE = (
    "table                    sqlite postgresql\n"
    "messages                      4          4\n"
    "embeddings                    3          3\n"
    "guild_settings                1          1\n"
    "opt_outs                      1          1\n"
    "message_tombstones            1          1\n"
    "history_exclusions            1          1\n"
    "place_names                   2          2\n"
    "quotations                    1          1\n"
    "member_exports                1          1\n"
    "performance_minutes           1          1\n"
    "not copied: 1 vectors under 'other-model' (another model or an earlier form of it)\n"
    "1 copied messages have no test-model vector; memory embeds them in the background when it opens on PostgreSQL\n"
)
COPIED = "copied: every table matches in every guild (test-model vectors)\n"


async def test_migrate_prints_counts_per_table_and_succeeds(migrate_cli) -> None:
    code, out, _ = await migrate_cli()
    assert (code, out) == (0, COUNTS_TABLE + COPIED)


async def test_messages_keep_their_row_ids_and_fields(migrate_cli, sqlite_memory: Path, database_url: str) -> None:
    await migrate_cli()
    rows = await fetch(database_url, "SELECT id, message_id, guild_id, author_name, content FROM messages ORDER BY id")
    assert [tuple(row) for row in rows] == [(1, 1, 1, "alice", "the quick brown fox"), (2, 2, 1, "alice", "jumps over"),
                                            (3, 3, 2, "bob", "the lazy dog"), (4, 4, 1, "alice",
                                                                                 "written by another model")]


async def test_copied_messages_are_found_by_keyword(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    rows = await fetch(database_url, "SELECT message_id FROM messages WHERE document @@ to_tsquery('simple', 'jump')")
    assert [row[0] for row in rows] == [2]


async def test_only_the_chosen_models_vectors_are_copied_exactly(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    rows = await fetch(database_url, "SELECT message_rowid, model, vector::text FROM embeddings ORDER BY message_rowid")
    assert [(row[0], row[1]) for row in rows] == [(1, MODEL), (2, MODEL), (3, MODEL)]
    np.testing.assert_array_equal(np.array(json.loads(rows[2][2]), dtype=np.float32), unit(3))


async def test_a_message_without_the_models_vector_waits_for_one_in_postgresql(migrate_cli, database_url: str
                                                                               ) -> None:
    await migrate_cli()
    rows = await fetch(database_url, "SELECT m.message_id FROM pending_vectors AS p JOIN messages AS m "
                                     "ON m.id = p.message_rowid WHERE p.rejected_at IS NULL")
    assert [row[0] for row in rows] == [4]


async def test_settings_opt_outs_and_tombstones_are_copied(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    store = await PostgresStore.open(database_url)
    try:
        settings, opt_outs = await store.guild_settings(1), await store.opt_outs()
        stored, deleted = await store.known_message_ids([1, 99])
    finally:
        await store.close()
    assert (settings, opt_outs, stored, deleted) == ({"retention_days": 30}, {(2, 200)}, {1}, {99})


async def test_what_history_must_not_bring_back_is_copied(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    store = await PostgresStore.open(database_url)
    try:
        exclusions = await PostgresBackend(store).history(asyncio.Lock()).exclusions(1, 10, None)
    finally:
        await store.close()
    assert exclusions == [FORGOTTEN]


async def test_new_row_ids_in_postgresql_come_after_the_copied_ones(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    store = await PostgresStore.open(database_url)
    try:
        rowids = store.allocate_rowids(1)
    finally:
        await store.close()
    assert rowids.start > 4


def without_rates(err: str) -> str:
    """Progress lines less their rate and time, which depend on the machine."""
    return re.sub(r", \d+ row/s, (done in|about) [\d:]+( left)?", "", err)


async def test_progress_goes_to_stderr_as_plain_lines_away_from_a_terminal(migrate_cli) -> None:
    _, _, err = await migrate_cli()
    assert without_rates(err) == (
        "messages: 4/4 (100%), 0 already there\nembeddings: 3/3 (100%), 0 already there\n"
        "guild_settings: 1/1 (100%), 0 already there\nopt_outs: 1/1 (100%), 0 already there\n"
        "message_tombstones: 1/1 (100%), 0 already there\nhistory_exclusions: 1/1 (100%), 0 already there\n"
        "place_names: 2/2 (100%), 0 already there\nquotations: 1/1 (100%), 0 already there\n"
        "member_exports: 1/1 (100%), 0 already there\nperformance_minutes: 1/1 (100%), 0 already there\n")


async def test_running_again_skips_what_is_there(migrate_cli) -> None:
    await migrate_cli()
    code, out, err = await migrate_cli()
    assert (code, out) == (0, COUNTS_TABLE + COPIED)
    assert "messages: 4/4 (100%), 4 already there\nembeddings: 3/3 (100%), 3 already there\n" in without_rates(err)


async def test_a_copy_cut_short_is_finished_by_running_again(migrate_cli, sqlite_memory: Path, database_url: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_migrate, "PAGE", 2)

    def stop_after_first_page(table: str, done: int, total: int, skipped: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await pg_migrate.copy_memory(sqlite_memory, database_url, MODEL, stop_after_first_page)
    assert len(await fetch(database_url, "SELECT id FROM messages")) == 2
    code, _, err = await migrate_cli()
    assert code == 0
    assert without_rates(err).startswith("messages: 2/4 (50%), 2 already there\nmessages: 4/4 (100%), 2 already there\n")


async def test_a_count_mismatch_fails(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("INSERT INTO opt_outs (guild_id, user_id) VALUES (5, 500)")
    finally:
        await conn.close()
    code, out, err = await migrate_cli()
    assert code == 1
    assert "opt_outs                      1          2  MISMATCH\n" in out
    assert err.endswith("error: opt_outs of guild 5: 0 in SQLite, 1 in PostgreSQL\n"
                        "error: counts differ; was the PostgreSQL database empty (or only an earlier copy) "
                        "when this began?\n")


async def test_counts_equal_in_all_but_different_per_guild_fail(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    conn = await asyncpg.connect(database_url)
    try:  # message 1 moves from guild 1 to guild 2 in PostgreSQL: every total still agrees, the guilds do not
        await conn.execute("UPDATE messages SET guild_id = 2 WHERE id = 1")
    finally:
        await conn.close()
    code, out, err = await migrate_cli()
    assert code == 1
    assert "messages                      4          4\nembeddings                    3          3\n" in out
    assert err.endswith("error: messages of guild 1: 3 in SQLite, 2 in PostgreSQL\n"
                        "error: messages of guild 2: 1 in SQLite, 2 in PostgreSQL\n"
                        "error: embeddings (test-model vectors) of guild 1: 2 in SQLite, 1 in PostgreSQL\n"
                        "error: embeddings (test-model vectors) of guild 2: 1 in SQLite, 2 in PostgreSQL\n"
                        "error: counts differ; was the PostgreSQL database empty (or only an earlier copy) "
                        "when this began?\n")


async def test_a_missing_sqlite_file_is_a_short_error(tmp_path: Path, database_url: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    missing = tmp_path / "nope.sqlite3"
    code = await run(parse_args(["--db", str(missing), "migrate", "--to", database_url, "--model", MODEL]), out, err)
    assert (code, err.getvalue()) == (1, f"error: no SQLite memory at {missing}\n")


def test_the_target_must_be_a_postgresql_url(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["migrate", "--to", "mysql://x/y"])
    assert "argument --to: must be a postgresql:// URL; you gave 'mysql://x/y'" in capsys.readouterr().err


async def test_the_readme_command_copies_the_vectors_memory_uses(tmp_path: Path, core_profile: MemoryProfile,
                                                                 database_url: str, make_record: RecordFactory,
                                                                 embedder: EmbeddingService) -> None:
    """``migrate --to URL`` with no other option: the profile's vectors, as memory stores them today, all arrive, and
    nothing waits to be embedded again on PostgreSQL."""
    db_path = tmp_path / "data" / "memory.sqlite3"
    db_path.parent.mkdir()
    (db_path.parent / PROFILE_CHOICE_PATH.name).write_text("cpu-small\n", encoding="utf-8")
    memory = await Memory.open(core_profile, db_path, tmp_path / "index")
    try:
        for message_id, words in enumerate(("the lake cabin is booked", "bring blankets", "the printer is broken"), 1):
            guild_id = 1 + message_id % 2
            await memory.add(make_record(message_id, words, guild_id=guild_id, channel_id=10 * guild_id))
        await memory.flush(vectors=True)
    finally:
        await memory.close()
    out, err = io.StringIO(), io.StringIO()
    code = await run(parse_args(["--db", str(db_path), "migrate", "--to", database_url]), out, err)
    assert code == 0, err.getvalue()
    assert out.getvalue().endswith(f"copied: every table matches in every guild ({embedder.model_name} vectors)\n")
    [(vectors,)] = await fetch(database_url, "SELECT COUNT(*) FROM embeddings WHERE model = $1", embedder.model_name)
    [(waiting,)] = await fetch(database_url, "SELECT COUNT(*) FROM pending_vectors")
    store = await PostgresStore.open(database_url)
    try:
        unembedded = await store.mark_unembedded(embedder.model_name)  # what Memory.open would queue
    finally:
        await store.close()
    assert (vectors, waiting, unembedded) == (3, 0, 0)


def test_the_key_migrate_derives_is_the_one_the_embedder_stores_under() -> None:
    assert vector_key("intfloat/multilingual-e5-small", None, "note: ") == EmbeddingService(
        "intfloat/multilingual-e5-small", passage_prefix="note: ").model_name


async def test_the_erasures_the_sqlite_memory_applied_are_copied(sqlite_memory: Path, migrate_cli,
                                                                 database_url: str) -> None:
    """PostgreSQL then knows them applied; one the SQLite file lacks is applied as memory opens on PostgreSQL."""
    store = await SqliteStore.open(sqlite_memory)
    try:
        await store.record_erasure("e1", 1_700_000_000.0, '{"kind": "forget"}')
    finally:
        await store.close()
    await migrate_cli()
    store = await PostgresStore.open(database_url)
    try:
        recorded = await store.erasures()
    finally:
        await store.close()
    assert recorded == {"e1": '{"kind": "forget"}'}


async def test_guild_and_channel_names_are_copied(migrate_cli, database_url: str) -> None:
    await migrate_cli()
    store = await PostgresStore.open(database_url)
    try:
        names = await store.place_names()
    finally:
        await store.close()
    assert names == NAMES


async def test_the_quotation_log_exports_and_performance_minutes_are_copied_once(migrate_cli, database_url: str
                                                                                ) -> None:
    await migrate_cli()
    code, _, _ = await migrate_cli()  # again: nothing is written twice
    quotations = await fetch(database_url, "SELECT message_id, kind, answer_message_id FROM quotations")
    exports = await fetch(database_url, "SELECT guild_id, user_id, exported_at FROM member_exports")
    minutes = await fetch(database_url, "SELECT origin, minute FROM performance_minutes")
    assert code == 0
    assert [tuple(row) for row in quotations] == [(1, "answer", 555)]
    assert [tuple(row) for row in exports] == [(1, 100, 1700000100.0)]
    assert [tuple(row) for row in minutes] == [("bot", 28333333.0)]
