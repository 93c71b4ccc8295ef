"""One member's records on both stores: their channels with counts and times, their messages read a page at a time
in either order (and only theirs, only this guild's), the quotation log (only of messages still held, gone with the
message) and the time of their last export."""

from __future__ import annotations

from collections.abc import Callable

from cogs.memory.memory import Memory
from cogs.memory.records import MessageRecord
from cogs.memory.store.member_rows import Quotation

MEMBER = 100


async def three_channels(memory: Memory, make_record: Callable[..., MessageRecord]) -> None:
    """The member says 5 things in channel 10, 2 in 11; someone else says 1 in 10; the member says 1 in guild 2."""
    for number in range(1, 6):
        await memory.add(make_record(number, f"note number {number}", author_id=MEMBER))
    await memory.add(make_record(6, "in eleven", channel_id=11, author_id=MEMBER))
    await memory.add(make_record(7, "also eleven", channel_id=11, author_id=MEMBER))
    await memory.add(make_record(8, "someone else", author_id=200))
    await memory.add(make_record(9, "elsewhere", guild_id=2, channel_id=20, author_id=MEMBER))
    await memory.flush()


async def test_a_members_channels_are_counted_with_their_first_and_last_times(any_memory, make_record):
    await three_channels(any_memory, make_record)
    channels = await any_memory.store.member_channels(1, MEMBER)
    assert [(c.channel_id, c.messages, c.private_thread) for c in channels] == [(10, 5, False), (11, 2, False)]
    first = make_record(1, "").created_at.timestamp()
    last = make_record(5, "").created_at.timestamp()
    assert (channels[0].first_at, channels[0].last_at) == (first, last)


async def test_a_members_messages_come_a_page_at_a_time_in_either_order(any_memory, make_record):
    await three_channels(any_memory, make_record)
    oldest = [m.message_id async for m in any_memory.store.iter_member_messages(1, MEMBER, page=2)]
    newest = [m.message_id async for m in any_memory.store.iter_member_messages(1, MEMBER, newest_first=True, page=3)]
    assert (oldest, newest) == ([1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1])


async def test_a_quotation_is_noted_only_for_a_message_still_held_and_goes_with_it(any_memory, make_record):
    await three_channels(any_memory, make_record)
    quotes = [Quotation(1, MEMBER, 2, 10, 1000.0, "search"), Quotation(1, MEMBER, 3, 10, 1001.0, "answer", 10, 77),
              Quotation(1, MEMBER, 404, 10, 1002.0, "search")]
    async with any_memory.ingest.write_lock:
        noted = await any_memory.store.record_quotations(quotes)
    await any_memory.forget_message(1, 2)
    kept = await any_memory.store.member_quotations(1, MEMBER)
    assert (noted, kept) == (2, [quotes[1]])


async def test_quotations_older_than_the_retention_are_pruned(any_memory, make_record):
    await three_channels(any_memory, make_record)
    async with any_memory.ingest.write_lock:
        await any_memory.store.record_quotations([Quotation(1, MEMBER, 2, 10, 1000.0, "llm"),
                                                  Quotation(1, MEMBER, 3, 10, 5000.0, "auto")])
        pruned = await any_memory.store.prune_quotations(1, 2000.0)
    assert (pruned, await any_memory.store.quotation_counts(1)) == (1, {"auto": 1})


async def test_the_last_export_is_kept_per_member_and_guild(any_memory):
    await any_memory.store.note_export(1, MEMBER, 123.0)
    await any_memory.store.note_export(1, MEMBER, 456.0)
    assert [await any_memory.store.last_export(1, MEMBER), await any_memory.store.last_export(2, MEMBER)] == [456.0,
                                                                                                             None]
