"""The erasure ledger's file: entries read back as written, each line checked by its checksum; a line a crash cut
short or a byte changed on disk costs only that line and is named; a rewrite is atomic; an append that fails leaves
the file as it was and says why."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from cogs.memory.privacy.ledger import (LEDGER_NAME, Erasure, ErasureLedger, ErasureNotRecorded, checksum,
                                        damaged_path, read_ledger, rewrite_ledger)
from tests.fixtures.ledger import change_a_byte, fill_the_disk, make_read_only


async def test_entries_read_back_as_they_were_appended(tmp_path: Path) -> None:
    ledger = ErasureLedger(tmp_path / "data" / LEDGER_NAME)
    written = [Erasure.new("forget", guild_id=1, channel_id=10, author_id=100, since=5.0, until=9.5),
               Erasure.new("deleted", message_ids=(1, 2)), Erasure.new("capture_on", guild_id=1, channel_id=10)]
    await ledger.append(*written[:2])
    await ledger.append(written[2])
    assert await ledger.read() == written


async def test_a_line_cut_short_is_named_and_skipped_and_the_next_entry_starts_a_new_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Reading says nothing: what reads the ledger as memory opens (known.reconcile) warns once and mends it."""
    path = tmp_path / LEDGER_NAME
    whole, cut, after = (Erasure.new("forget", guild_id=1, message_ids=(m,)) for m in (1, 2, 3))
    path.write_text(whole.to_json() + "\n" + cut.to_json()[:30])
    ledger = ErasureLedger(path)
    torn = await ledger.examine()
    await ledger.append(after)
    with caplog.at_level(logging.WARNING):
        entries = await ledger.read()
    assert (entries, caplog.records) == ([whole, after], [])
    assert (torn.entries, torn.damage()) == ((whole,), "line 2 (cut short)")
    assert (await ledger.examine()).damage() == "line 2 (not JSON)"  # no longer the last line


async def test_an_entry_of_an_unknown_kind_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_NAME
    path.write_text(Erasure.new("forget", guild_id=1).to_json().replace('"forget"', '"shred"') + "\n")
    assert await ErasureLedger(path).read() == []


def test_each_line_carries_the_checksum_of_its_other_fields() -> None:
    fields = json.loads(Erasure.new("deleted", message_ids=(7, 8)).to_json())
    given = fields.pop("sum")
    assert len(given) == 16 and given == checksum(fields)


def test_a_byte_changed_in_a_middle_line_is_named_by_its_line_number(tmp_path: Path) -> None:
    """One digit of a message id changed: still JSON, still an entry, but not the one written."""
    path = tmp_path / LEDGER_NAME
    first, middle, last = (Erasure.new("forget", guild_id=1, message_ids=(m,)) for m in (1111, 2222, 3333))
    path.write_text("".join(e.to_json() + "\n" for e in (first, middle, last)))
    change_a_byte(path, 2, b"2222", b"2232")
    reading = read_ledger(path)
    assert (reading.entries, reading.damage(), reading.clean) == ((first, last), "line 2 (checksum does not match)",
                                                                  False)


def test_a_line_written_before_checksums_is_read_and_counted_for_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_NAME
    old = Erasure.new("forget", guild_id=1, message_ids=(5,))
    fields = json.loads(old.to_json())
    del fields["sum"]
    path.write_text(json.dumps(fields) + "\n" + Erasure.new("opt_in", guild_id=1, author_id=2).to_json() + "\n")
    reading = read_ledger(path)
    assert ([e.id for e in reading.entries][0], reading.unsummed, reading.damaged, reading.clean) == (
        old.id, 1, (), False)


def test_a_missing_ledger_reads_as_empty_and_missing(tmp_path: Path) -> None:
    reading = read_ledger(tmp_path / LEDGER_NAME)
    assert (reading.entries, reading.missing, reading.clean) == ((), True, True)


def test_a_rewrite_replaces_the_file_whole_private_and_keeps_the_damaged_lines_beside_it(tmp_path: Path) -> None:
    path = tmp_path / LEDGER_NAME
    kept = Erasure.new("forget", guild_id=1, message_ids=(1,))
    path.write_text(kept.to_json() + "\n" + "{not an entry\n")
    reading = read_ledger(path)
    rewrite_ledger(path, reading.entries, reading.damaged)
    again = read_ledger(path)
    assert (again.entries, again.clean, stat.S_IMODE(path.stat().st_mode)) == ((kept,), True, 0o600)
    assert (damaged_path(path).read_text(), sorted(p.name for p in tmp_path.iterdir())) == (
        "{not an entry\n", [LEDGER_NAME, LEDGER_NAME + ".damaged"])


def test_a_rewrite_that_fails_leaves_the_ledger_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / LEDGER_NAME
    before = Erasure.new("forget", guild_id=1, message_ids=(1,)).to_json() + "\n"
    path.write_text(before)
    fill_the_disk(monkeypatch)
    with pytest.raises(OSError):
        rewrite_ledger(path, [Erasure.new("forget", guild_id=1, message_ids=(2,))])
    assert (path.read_text(), sorted(p.name for p in tmp_path.iterdir())) == (before, [LEDGER_NAME])


async def test_an_append_on_a_full_disk_says_so_and_leaves_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    first = Erasure.new("forget", guild_id=1, message_ids=(1,))
    await ledger.append(first)
    fill_the_disk(monkeypatch)
    with pytest.raises(ErasureNotRecorded) as raised:
        await ledger.append(Erasure.new("forget", guild_id=1, message_ids=(2,)))
    assert (raised.value.reason, str(raised.value)) == (
        "the disk is full", f"the erasure ledger {ledger.path} cannot be written (the disk is full)")
    reading = read_ledger(ledger.path)
    assert (reading.entries, reading.clean) == ((first,), True)


async def test_an_append_to_a_read_only_ledger_says_permission_denied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = ErasureLedger(tmp_path / LEDGER_NAME)
    await ledger.append(Erasure.new("forget", guild_id=1, message_ids=(1,)))
    make_read_only(ledger.path, monkeypatch)
    with pytest.raises(ErasureNotRecorded) as raised:
        await ledger.append(Erasure.new("forget", guild_id=1, message_ids=(2,)))
    assert raised.value.reason == "permission denied" and len(await ledger.read()) == 1

