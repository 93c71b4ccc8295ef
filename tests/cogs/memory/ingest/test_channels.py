"""A channel belongs to one guild: a message whose channel (or thread parent) another guild holds is refused alone,
with one line saying what to do, and the rest of its batch is stored. Both stores."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest

from cogs.memory.chat_export.importer import import_exports
from cogs.memory.ingest.queue import IngestError, IngestQueue
from cogs.memory.memory import Memory
from cogs.memory.store.protocol import Store
from tests.fixtures.core import RecordFactory

WRITER = "cogs.memory.ingest.writer"


async def stored_ids(store: Store, *message_ids: int) -> set[int]:
    stored, _ = await store.known_message_ids(list(message_ids))
    return stored


def refusal(message_id: int, kind: str, channel_id: int, guild_id: int) -> str:
    return (f"Message {message_id} cannot be stored and is dropped: its {kind} {channel_id} belongs to guild "
            f"{guild_id} (a channel belongs to one guild: an export imported into the wrong guild?); if guild "
            f"{guild_id} is the wrong one, forget it there first: python -m cogs.memory forget --guild {guild_id} "
            f"--channel {channel_id}")


async def test_a_message_whose_channel_another_guild_holds_is_refused_alone(
    memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await memory_ingest.add(make_record(1, "said in guild one's channel 10"))
    await memory_ingest.flush()
    await memory_ingest.add(make_record(2, "channel 10 again, said to be guild two's", guild_id=2, channel_id=10))
    await memory_ingest.add(make_record(3, "guild two's own channel", guild_id=2, channel_id=20))
    await memory_ingest.add(make_record(4, "guild one's channel 10 goes on"))
    with caplog.at_level(logging.ERROR, logger=WRITER), pytest.raises(IngestError) as raised:
        await memory_ingest.flush()
    assert (raised.value.report.rejected, raised.value.report.stored) == ((2,), 2)
    assert [r.getMessage() for r in caplog.records if r.name == WRITER] == [refusal(2, "channel", 10, 1)]
    assert await stored_ids(memory_store, 1, 2, 3, 4) == {1, 3, 4}


async def test_a_thread_whose_parent_another_guild_holds_is_refused(
    memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory, caplog: pytest.LogCaptureFixture
) -> None:
    await memory_ingest.add(make_record(1, "said in guild one's channel 10"))
    await memory_ingest.add(make_record(2, "in a thread of guild two under channel 10", guild_id=2, channel_id=2011,
                                        parent_channel_id=10))
    with caplog.at_level(logging.ERROR, logger=WRITER), pytest.raises(IngestError) as raised:
        await memory_ingest.flush()
    assert raised.value.report.rejected == (2,)
    assert refusal(2, "thread's parent channel", 10, 1) in caplog.messages
    assert await stored_ids(memory_store, 1, 2) == {1}


async def test_a_channel_new_to_memory_goes_to_the_first_guild_of_the_batch(
    memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory
) -> None:
    await memory_ingest.add(make_record(1, "the first to say it", guild_id=3, channel_id=30))
    await memory_ingest.add(make_record(2, "the same channel in another guild", guild_id=4, channel_id=30))
    await memory_ingest.add(make_record(3, "guild three goes on", guild_id=3, channel_id=30))
    with pytest.raises(IngestError) as raised:
        await memory_ingest.flush()
    assert raised.value.report.rejected == (2,)
    assert await stored_ids(memory_store, 1, 2, 3) == {1, 3}


async def test_a_channel_forgotten_in_the_wrong_guild_is_taken_by_the_right_one(
    memory_ingest: IngestQueue, memory_store: Store, make_record: RecordFactory
) -> None:
    await memory_ingest.add(make_record(1, "imported into the wrong guild", guild_id=2, channel_id=10))
    await memory_ingest.flush()
    await memory_ingest.add(make_record(2, "the right guild's message", channel_id=10))
    with pytest.raises(IngestError):
        await memory_ingest.flush()
    await memory_ingest.delete_channel(2, 10)
    await memory_ingest.add(make_record(3, "the right guild's message, once the wrong import is forgotten"))
    await memory_ingest.flush()
    assert await stored_ids(memory_store, 1, 2, 3) == {3}


async def test_an_export_imported_into_the_wrong_guild_is_rejected_and_the_import_fails(
    any_memory: Memory, tmp_path: Path, make_record: RecordFactory
) -> None:
    await any_memory.add(make_record(1, "guild one's channel 10"))
    await any_memory.flush()
    path = tmp_path / "wrong.json"
    author = {"id": "5", "name": "alice", "nickname": None, "isBot": False}
    path.write_text(json.dumps({
        "guild": {"id": "2", "name": "Other"},
        "channel": {"id": "10", "type": "GuildTextChat", "categoryId": None, "name": "general"},
        "messages": [{"id": str(i), "type": "Default", "timestamp": f"2024-05-01T12:0{i}:00+00:00",
                      "timestampEdited": None, "content": f"message {i}", "author": author, "attachments": [],
                      "embeds": []} for i in (7, 8)],
    }), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    code = await import_exports(any_memory, [path], out, err)
    assert (code, out.getvalue().splitlines()[0]) == (
        1, f"{path}: #general (guild 2): 0 stored, 0 already stored, 0 skipped, 2 rejected")
    assert await stored_ids(any_memory.store, 7, 8) == set()
