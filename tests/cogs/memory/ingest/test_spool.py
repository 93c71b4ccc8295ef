"""IngestSpool: the local file that keeps captured messages while PostgreSQL is away."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path

from cogs.memory.ingest.spool import IngestSpool
from tests.fixtures.core import RecordFactory


async def test_kept_messages_come_back_whole_and_in_order_from_another_instance(tmp_path: Path,
                                                                              make_record: RecordFactory) -> None:
    first = dataclasses.replace(make_record(7, "see the photo"), attachments=("photo.png",), reply_to_id=5,
                                edited_at=datetime(2024, 5, 1, 12, 3, tzinfo=UTC), private_thread=True)
    second = make_record(3, "an earlier id, kept later")
    spool = IngestSpool(tmp_path / "data" / "spool.sqlite3")
    ids = await spool.add([first, second])
    await spool.close()
    again = IngestSpool(tmp_path / "data" / "spool.sqlite3")
    try:
        assert await again.read() == [(ids[0], first), (ids[1], second)]
        await again.remove(ids[:1])
        assert await again.read() == [(ids[1], second)]
    finally:
        await again.close()


async def test_reading_a_spool_never_written_makes_no_file(tmp_path: Path) -> None:
    spool = IngestSpool(tmp_path / "spool.sqlite3")
    assert await spool.read() == []
    await spool.close()
    assert not (tmp_path / "spool.sqlite3").exists()
