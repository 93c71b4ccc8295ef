"""One admission rule for every way in: a message is stored only if live capture would store it now, whether it
comes live, from reading history again, or from an import; messages dated before and after each event, on both
stores."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cogs.memory.chat_export.importer import import_exports
from cogs.memory.memory import Memory
from cogs.memory.records import MessageRecord

GUILD, CHANNEL, MEMBER, OTHER = 1, 10, 100, 200


def said(message_id: int, minutes: float, *, author_id: int = MEMBER, channel_id: int = CHANNEL,
         parent_channel_id: int | None = None, guild_id: int = GUILD) -> MessageRecord:
    """A message said ``minutes`` from now (negative: before now)."""
    return MessageRecord(message_id=message_id, guild_id=guild_id, channel_id=channel_id,
                         parent_channel_id=parent_channel_id, author_id=author_id, author_name=f"user{author_id}",
                         content=f"note number {message_id} about the harbour",
                         created_at=datetime.now(UTC) + timedelta(minutes=minutes))


async def stored_ids(memory: Memory, *records: MessageRecord) -> set[int]:
    stored, _ = await memory.known_message_ids([record.message_id for record in records])
    return stored


async def add_all(memory: Memory, *records: MessageRecord) -> set[int]:
    for record in records:
        await memory.add(record)
    await memory.flush()
    return await stored_ids(memory, *records)


async def opt_out(memory: Memory) -> None:
    await memory.set_opt_out(GUILD, MEMBER, True)
    await memory.forget_author(GUILD, MEMBER)


async def forget_member(memory: Memory) -> None:
    await memory.forget_author(GUILD, MEMBER)


async def forget_channel(memory: Memory) -> None:
    await memory.forget_channel(GUILD, CHANNEL)


async def forget_guild(memory: Memory) -> None:
    await memory.forget_guild(GUILD)


async def capture_off(memory: Memory) -> None:
    settings = await memory.settings(GUILD)
    await memory.save_settings(GUILD, settings.with_changes(capture_disabled_channel_ids=frozenset({CHANNEL})))


Event = Callable[[Memory], Awaitable[None]]

# (event, stored of: the member's message before it, theirs after it, someone else's after it in the channel)
CASES: list[tuple[str, Event, tuple[bool, bool, bool]]] = [
    ("opt-out", opt_out, (False, False, True)),
    ("member forgotten", forget_member, (False, True, True)),
    ("channel forgotten", forget_channel, (False, True, True)),
    ("guild forgotten", forget_guild, (False, True, True)),
    ("capture off", capture_off, (False, False, False)),
]


@pytest.mark.parametrize(("event", "expected"), [(event, expected) for _, event, expected in CASES],
                         ids=[name for name, _, _ in CASES])
async def test_what_comes_in_after_an_event_is_stored_only_as_live_capture_would(
    any_memory: Memory, event: Event, expected: tuple[bool, bool, bool]
) -> None:
    await event(any_memory)
    before, after, others = said(1, -60), said(2, 5), said(3, 5, author_id=OTHER)
    stored = await add_all(any_memory, before, after, others)
    assert (1 in stored, 2 in stored, 3 in stored) == expected


async def test_a_forgotten_message_is_never_stored_again(any_memory: Memory) -> None:
    await any_memory.forget_message(GUILD, 1)
    await any_memory.store.prune_tombstones(float("inf"))  # long after: the tombstone went, the forget did not
    assert await add_all(any_memory, said(1, -60), said(2, -59)) == {2}


async def test_a_thread_of_a_channel_whose_capture_is_off_is_not_stored(any_memory: Memory) -> None:
    await capture_off(any_memory)
    thread = said(1, 1, channel_id=11, parent_channel_id=CHANNEL)
    assert await add_all(any_memory, thread, said(2, 1, channel_id=12)) == {2}


async def test_what_was_said_while_capture_was_off_stays_out_once_it_is_on_again(any_memory: Memory) -> None:
    settings = await any_memory.settings(GUILD)
    await any_memory.save_settings(GUILD, settings.with_changes(capture_disabled_channel_ids=frozenset({CHANNEL})))
    while_off = said(2, 0)
    await any_memory.save_settings(GUILD, settings)
    # Said an hour before capture went off, and after it came on again: stored; said while it was off: not.
    assert await add_all(any_memory, said(1, -60), while_off, said(3, 1)) == {1, 3}


async def test_messages_older_than_the_guilds_retention_are_not_stored(any_memory: Memory) -> None:
    settings = await any_memory.settings(GUILD)
    await any_memory.save_settings(GUILD, settings.with_changes(retention_days=7))
    assert await add_all(any_memory, said(1, -8 * 24 * 60), said(2, -6 * 24 * 60)) == {2}


async def test_an_opt_out_committed_by_another_process_is_obeyed(any_memory: Memory) -> None:
    """The rule is read from the database for every batch, not from what this process cached."""
    assert not await any_memory.is_opted_out(GUILD, MEMBER)  # cached before the other process writes
    await any_memory.store.set_opt_out(GUILD, MEMBER, True)
    assert await add_all(any_memory, said(1, 1), said(2, 1, author_id=OTHER)) == {2}


# -- import -----------------------------------------------------------------------------------------------------


def exported(message_id: int, minutes: float, author_id: int = MEMBER) -> dict:
    created = datetime.now(UTC) + timedelta(minutes=minutes)
    return {"id": str(message_id), "type": "Default", "timestamp": created.isoformat(), "timestampEdited": None,
            "content": f"note number {message_id} about the harbour",
            "author": {"id": str(author_id), "name": f"user{author_id}", "nickname": None, "isBot": False},
            "attachments": [], "embeds": []}


def export_file(path: Path, *messages: dict) -> Path:
    path.write_text(json.dumps({
        "guild": {"id": str(GUILD), "name": "Harbour"},
        "channel": {"id": str(CHANNEL), "type": "GuildTextChat", "categoryId": None, "name": "general"},
        "messages": list(messages)}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("event", "expected"), [(event, expected) for _, event, expected in CASES],
                         ids=[name for name, _, _ in CASES])
async def test_an_import_stores_only_what_live_capture_would(
    any_memory: Memory, tmp_path: Path, event: Event, expected: tuple[bool, bool, bool]
) -> None:
    await event(any_memory)
    path = export_file(tmp_path / "export.json", exported(1, -60), exported(2, 5), exported(3, 5, author_id=OTHER))
    out, err = io.StringIO(), io.StringIO()
    code = await import_exports(any_memory, [path], out, err)
    stored, _ = await any_memory.known_message_ids([1, 2, 3])
    assert (1 in stored, 2 in stored, 3 in stored) == expected
    count = sum(expected)
    assert (code, out.getvalue().splitlines()[-1]) == (
        0, f"imported 1 of 1 file(s): {count} stored, 0 already stored, {3 - count} skipped, 0 rejected")
