"""Migrations SQLite 0012 / PostgreSQL 0008: vectors of an earlier input form, which quote the message before them,
are dropped from an old database (a restored backup too); vectors of the message alone stay."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cogs.memory.store.postgres.store import PostgresStore
from cogs.memory.store.protocol import Store
from cogs.memory.store.rows import WriteBatch
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import insert, query, unit

ALONE = "all-MiniLM-L6-v2 [message alone]"
EARLIER = ("all-MiniLM-L6-v2 [mean of alone and after previous]", "all-MiniLM-L6-v2 [alone + after previous]",
           "all-MiniLM-L6-v2")
MIGRATION = {"sqlite": "0012_vectors_of_the_message_alone", "postgresql": "0008_vectors_of_the_message_alone"}
FORGET_MIGRATION = "DELETE FROM schema_migrations WHERE name = ?"


async def open_store(db_path: Path, url: str | None) -> Store:
    return await (SqliteStore.open(db_path) if url is None else PostgresStore.open(url))


async def test_an_old_database_keeps_only_the_vectors_of_the_message_alone(
        store_kind: str, store_url: str | None, db_path: Path, make_record: RecordFactory) -> None:
    kind = store_kind
    store = await open_store(db_path, store_url)
    try:
        # A database from before the migration: each message also has vectors under the keys of earlier forms.
        rowids = await insert(store, make_record(1, "the cabin by the lake"), make_record(2, "booked it for July"),
                              model=ALONE)
        for model in EARLIER:
            batch = WriteBatch(model, guild_ids={1})
            batch.vectors = [(rowid, unit(rowid + 7)) for rowid in rowids]
            await store.write(batch)
        assert len(await query(store, "SELECT model FROM embeddings")) == 2 * (1 + len(EARLIER))
        if kind == "postgresql":
            await query(store, FORGET_MIGRATION + " RETURNING name", MIGRATION[kind])
    finally:
        await store.close()
    if kind == "sqlite":
        with sqlite3.connect(db_path) as connection:
            connection.execute(FORGET_MIGRATION, (MIGRATION[kind],))
    store = await open_store(db_path, store_url)
    try:
        kept = await query(store, "SELECT message_rowid, model FROM embeddings ORDER BY message_rowid")
    finally:
        await store.close()
    assert kept == [(rowid, ALONE) for rowid in rowids]
