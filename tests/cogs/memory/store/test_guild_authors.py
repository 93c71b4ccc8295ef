"""A guild's authors as both stores list them (``members``, ``forget --member @name``): by id, with the name on
their newest message, their message count and its time, most messages first; another guild's authors never."""

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
