"""A guild's authors as both stores list them (``members``, ``forget --member @name``): by id, with the name on
their newest message (of names last used at one moment, the first in code-point order), their message count and its
time, most messages first; another guild's authors never. One store query (``author_names``) serves both lists and
the members' names a search reads questions against."""

from __future__ import annotations

from cogs.memory.memory import Memory
from cogs.memory.store.rows import AuthorSeen, to_timestamp
from tests.fixtures.core import T0


async def test_each_author_once_with_the_newest_name_and_count(any_memory: Memory, make_record) -> None:
    await any_memory.add(make_record(1, "first words", author_id=100, author_name="ann"))
    await any_memory.add(make_record(2, "a reply", author_id=200, author_name="ben"))
    await any_memory.add(make_record(3, "renamed since", author_id=100, author_name="annie"))
    await any_memory.add(make_record(4, "and again", author_id=100, author_name="annie", channel_id=11))
    await any_memory.add(make_record(5, "another guild", guild_id=2, channel_id=20, author_id=300))
    await any_memory.flush()
    minute = 60.0
    assert await any_memory.authors(1) == [AuthorSeen(100, "annie", 3, to_timestamp(T0) + 4 * minute),
                                           AuthorSeen(200, "ben", 1, to_timestamp(T0) + 2 * minute)]
    assert [author.author_id for author in await any_memory.authors(2)] == [300]


async def test_of_names_last_used_at_one_time_the_first_in_code_point_order_is_the_newest_on_both_stores(
        any_memory: Memory, make_record) -> None:
    # Two names on messages of one moment: "Zed" comes before "alice" by code point (not in a locale's order), and
    # the later message id carries "alice".
    await any_memory.add(make_record(1, "first", author_id=100, author_name="ann", minute=1))
    await any_memory.add(make_record(2, "same moment", author_id=100, author_name="Zed", minute=5))
    await any_memory.add(make_record(3, "same moment", author_id=100, author_name="alice", minute=5))
    await any_memory.flush()
    at = to_timestamp(T0) + 5 * 60.0
    assert await any_memory.store.author_names(1) == [AuthorSeen(100, "Zed", 1, at), AuthorSeen(100, "alice", 1, at),
                                                      AuthorSeen(100, "ann", 1, to_timestamp(T0) + 60.0)]
    assert await any_memory.authors(1) == [AuthorSeen(100, "Zed", 3, at)]
    # The names a search reads questions against (search/named.py) say the same.
    members, _ = await any_memory.search_engine._guild_names(1)
    assert members == {100: "Zed"}
