"""The dashboard's rows in both stores: each name each member wrote under, each message's author, and the Performance
figures by the minute, kept across a reopen and bounded per origin."""

from __future__ import annotations

from pathlib import Path

from cogs.memory.store.rows import AuthorSeen, PerformanceMinute, to_timestamp
from cogs.memory.store.sqlite.store import SqliteStore
from tests.fixtures.core import T0
from tests.fixtures.stores import insert


async def test_each_name_each_author_wrote_under_is_a_row_of_their_guild_alone(memory_store, make_record) -> None:
    await insert(memory_store,
                 make_record(1, "hello", author_id=7, author_name="Alice"),
                 make_record(2, "again", author_id=7, author_name="alice"),
                 make_record(3, "and again", author_id=7, author_name="alice"),
                 make_record(4, "bob here", author_id=9, author_name="bob"),
                 make_record(5, "other guild", guild_id=2, channel_id=20, author_id=10, author_name="alice"))
    at = to_timestamp(T0)
    assert await memory_store.author_names(1) == [AuthorSeen(7, "alice", 2, at + 180),
                                                  AuthorSeen(7, "Alice", 1, at + 60), AuthorSeen(9, "bob", 1, at + 240)]
    assert await memory_store.author_names(3) == []


async def test_each_message_has_the_author_and_name_it_was_stored_with(memory_store, make_record) -> None:
    await insert(memory_store,
                 make_record(1, "hello", author_id=7, author_name="Alice"),
                 make_record(2, "again", author_id=7, author_name="alice"),
                 make_record(4, "bob here", author_id=9, author_name="bob"),
                 make_record(5, "other guild", guild_id=2, channel_id=20, author_id=10, author_name="alice"))
    assert await memory_store.message_authors([1, 4, 99]) == {1: (7, "Alice"), 4: (9, "bob")}


async def test_performance_minutes_replace_a_rewritten_minute_and_keep_only_the_newest(memory_store) -> None:
    minutes = [PerformanceMinute("bot", 60.0 * n, f'{{"n": {n}}}') for n in range(5)]
    await memory_store.keep_performance_minutes(minutes, keep=3)
    await memory_store.keep_performance_minutes([PerformanceMinute("bot", 240.0, '{"n": "again"}'),
                                                 PerformanceMinute("standalone", 0.0, "{}")], keep=3)
    assert await memory_store.performance_minutes("bot", 0.0) == [
        PerformanceMinute("bot", 120.0, '{"n": 2}'), PerformanceMinute("bot", 180.0, '{"n": 3}'),
        PerformanceMinute("bot", 240.0, '{"n": "again"}')]
    assert [m.minute for m in await memory_store.performance_minutes("bot", 180.0)] == [180.0, 240.0]
    assert await memory_store.performance_minutes("standalone", 0.0) == [PerformanceMinute("standalone", 0.0, "{}")]


async def test_performance_minutes_outlive_a_reopen(db_path: Path) -> None:
    store = await SqliteStore.open(db_path)
    try:
        await store.keep_performance_minutes([PerformanceMinute("bot", 600.0, '{"recalls": 3}')], keep=10)
    finally:
        await store.close()
    store = await SqliteStore.open(db_path)
    try:
        assert await store.performance_minutes("bot", 0.0) == [PerformanceMinute("bot", 600.0, '{"recalls": 3}')]
    finally:
        await store.close()
