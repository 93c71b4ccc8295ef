"""The quotation log: a note per message shown to someone other than its author, written in batches off the recall
path, dropped for a guild whose log is off, pruned past its retention by the retention sweep, and gone with a
forgotten message, through a restore of a backup taken before the forget too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from cogs.memory.memory import Memory
from cogs.memory.records import Hit, MessageRecord
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.store.sqlite.backup import backup_database, restore_database

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
AUTHOR, ASKER = 100, 200


def record(message_id: int, author_id: int = AUTHOR) -> MessageRecord:
    return MessageRecord(message_id=message_id, guild_id=1, channel_id=10, parent_channel_id=None,
                         author_id=author_id, author_name=f"user{author_id}", content=f"note {message_id}",
                         created_at=T0 + timedelta(minutes=message_id))


def hit(message_id: int, author_id: int = AUTHOR) -> Hit:
    return Hit(message_id, 1, 10, author_id, f"user{author_id}", f"note {message_id}",
               T0 + timedelta(minutes=message_id), 1.0, ("keyword",), 1)


async def held(memory: Memory, *ids: int) -> Memory:
    for message_id in ids:
        await memory.add(record(message_id))
    await memory.flush()
    return memory


async def quoted(memory: Memory) -> list[int]:
    return sorted(q.message_id for q in await memory.store.member_quotations(1, AUTHOR))


async def test_a_members_own_message_shown_to_them_is_not_a_quotation(any_memory):
    await held(any_memory, 1, 2)
    noted = any_memory.quotations.note([hit(1), hit(2)], "search", AUTHOR)
    noted += any_memory.quotations.note([hit(1)], "search", ASKER)
    await any_memory.quotations.flush()
    assert (noted, await quoted(any_memory)) == (1, [1])


async def test_noting_waits_for_no_database_and_the_writer_writes_them(any_memory):
    await held(any_memory, 1)
    any_memory.quotations.note([hit(1)], "llm", ASKER)
    waiting = any_memory.quotations.waiting
    assert (waiting, await quoted(any_memory)) == (1, [])  # not written yet: the recall did not wait for it
    await any_memory.quotations.flush()
    assert (any_memory.quotations.waiting, await quoted(any_memory)) == (0, [1])


async def test_a_guild_with_its_log_off_gets_no_notes(any_memory):
    await held(any_memory, 1)
    settings = await any_memory.settings(1)
    await any_memory.save_settings(1, settings.with_changes(quotation_log=False))
    any_memory.quotations.note([hit(1)], "auto", ASKER)
    assert (await any_memory.quotations.flush(), await quoted(any_memory)) == (0, [])


async def test_the_retention_sweep_prunes_notes_past_the_guilds_retention(any_memory):
    await held(any_memory, 1)
    any_memory.quotations.note([hit(1)], "answer", ASKER)
    await any_memory.quotations.flush()
    settings = await any_memory.settings(1)
    await any_memory.save_settings(1, settings.with_changes(quotation_retention_days=30))
    await any_memory.apply_retention(datetime.now(UTC) + timedelta(days=29))
    kept = await quoted(any_memory)
    await any_memory.apply_retention(datetime.now(UTC) + timedelta(days=31))
    assert (kept, await quoted(any_memory)) == ([1], [])


async def test_a_forgotten_messages_notes_go_with_it(any_memory):
    await held(any_memory, 1, 2)
    any_memory.quotations.note([hit(1), hit(2)], "search", ASKER)
    await any_memory.quotations.flush()
    await any_memory.forget_message(1, 1)
    assert await quoted(any_memory) == [2]


async def test_a_restored_backup_brings_back_no_note_of_a_forgotten_message(core_profile: MemoryProfile,
                                                                           tmp_path: Path, embedder: object):
    data = tmp_path / "data"
    memory = await held(await Memory.open(core_profile, data / "memory.sqlite3", data / "indexes"), 1, 2)
    memory.quotations.note([hit(1), hit(2)], "answer", ASKER, answer_channel_id=10, answer_message_id=99)
    await memory.quotations.flush()
    backup = backup_database(data / "memory.sqlite3", tmp_path / "backup.sqlite3").path
    await memory.forget_author(1, AUTHOR)
    await memory.close()
    restore_database(backup, data / "memory.sqlite3", data / "indexes")
    memory = await Memory.open(core_profile, data / "memory.sqlite3", data / "indexes")
    try:
        assert await quoted(memory) == []
    finally:
        await memory.close()
