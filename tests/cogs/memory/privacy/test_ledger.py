"""The erasure ledger's file: entries read back as written, and a line a crash cut short costs only that line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from cogs.memory.privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger


async def test_entries_read_back_as_they_were_appended(tmp_path: Path) -> None:
    ledger = ErasureLedger(tmp_path / "data" / LEDGER_NAME)
    written = [Erasure.new("forget", guild_id=1, channel_id=10, author_id=100, since=5.0, until=9.5),
               Erasure.new("deleted", message_ids=(1, 2)), Erasure.new("capture_on", guild_id=1, channel_id=10)]
    await ledger.append(*written[:2])
    await ledger.append(written[2])
    assert await ledger.read() == written


async def test_a_line_cut_short_is_skipped_with_a_warning_and_the_next_entry_starts_a_new_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / LEDGER_NAME
    whole, cut, after = (Erasure.new("forget", guild_id=1, message_ids=(m,)) for m in (1, 2, 3))
    path.write_text(whole.to_json() + "\n" + cut.to_json()[:30])
    ledger = ErasureLedger(path)
    await ledger.append(after)
    with caplog.at_level(logging.WARNING):
        entries = await ledger.read()
    assert (entries, [r.levelno for r in caplog.records]) == ([whole, after], [logging.WARNING])


async def test_an_entry_of_an_unknown_kind_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_NAME
    path.write_text(Erasure.new("forget", guild_id=1).to_json().replace('"forget"', '"shred"') + "\n")
    assert await ErasureLedger(path).read() == []
