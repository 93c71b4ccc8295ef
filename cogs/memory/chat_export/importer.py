"""Imports DiscordChatExporter exports into memory file by file, and reports what each one stored.

What counts as stored is read back from the database, never assumed from what was queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .reader import Export, ExportedChannel, ExportError, read_export
from ..ingest.queue import FlushReport, IngestError, stored_content
from ..memory import Memory
from ..privacy.admission import SHORT_REASONS
from ..records import MessageRecord
from ..runtime.progress import TerminalProgress
from ..runtime.safe_text import terminal_text
from ..store.protocol import DatabaseUnavailableError

__all__ = ("FileReport", "import_exports")

log = logging.getLogger(__name__)

# The count of stored messages is read back for the progress after this many are queued, and then, while the last
# ones are written, this often.
PROGRESS_EVERY = 200
PROGRESS_SECONDS = 2.0
# Rejected messages listed one per line for each file; past this, a count.
MAX_REJECTS_SHOWN = 10


@dataclass(frozen=True, slots=True)
class FileReport:
    """What one export came to; the counts add up to the file's messages. ``skipped``: not meant to be stored, for
    the reasons in ``skip_reasons`` (system notices, bots, opted out, forgotten, deleted on Discord since, nothing to
    remember). ``not_stored``: messages memory should have stored and did not (a write failed; ``reason`` says why)."""

    path: Path
    channel: str
    stored: int
    already_stored: int
    skipped: int
    rejected: int
    not_stored: int
    reason: str | None = None
    # Messages in memory (this file's or earlier) stored and still waiting for a vector once it was stored.
    vectors_pending: int = 0
    vectors_error: str | None = None
    # (why, how many) for each reason some were skipped, most first; the counts add up to ``skipped``.
    skip_reasons: tuple[tuple[str, int], ...] = ()

    def line(self) -> str:
        why = ", ".join(f"{count} {_plural(reason, count)}" for reason, count in self.skip_reasons)
        text = (f"{self.path}: {self.channel}: {self.stored} stored, {self.already_stored} already stored, "
                f"{self.skipped} skipped{f' ({why})' if why else ''}, {self.rejected} rejected")
        if self.not_stored:
            text += f", {self.not_stored} NOT stored ({self.reason or 'see the log above'})"
        return text


# The reasons a message of an export is skipped besides the admission rule's (SHORT_REASONS).
SYSTEM_MESSAGE = "system message"
DELETED_SINCE = "deleted since"
EMPTY = "empty"


def _plural(reason: str, count: int) -> str:
    return f"{reason}s" if reason == SYSTEM_MESSAGE and count != 1 else reason


def _reasons(skips: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((reason, count) for reason, count in skips.items() if count), key=lambda p: (-p[1], p[0])))


class _StoredTally:
    """Counts the queued messages the database holds so far, by asking it."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._waiting: list[int] = []
        self.stored = 0

    def queued(self, message_id: int) -> None:
        self._waiting.append(message_id)

    async def update(self) -> int:
        stored, _ = await self._memory.known_message_ids(self._waiting)
        self._waiting = [message_id for message_id in self._waiting if message_id not in stored]
        self.stored += len(stored)
        return self.stored

    @property
    def waiting(self) -> list[int]:
        """The queued messages the database does not hold (yet)."""
        return list(self._waiting)


@dataclass(frozen=True, slots=True)
class _Outcome:
    stored: int
    not_stored: int
    rejected: int  # by ingest, for their data (an export's unreadable messages are rejected before)
    reason: str | None
    vectors_pending: int = 0  # stored, and waiting for a vector (the model or the vectors' write failed)
    vectors_error: str | None = None
    # Refused by the admission rule as they were written (an opt-out or a forget during the import), by reason.
    refused: Counter[str] | None = None


async def _flush(memory: Memory, tally: _StoredTally, progress: TerminalProgress) -> FlushReport:
    """``memory.flush()``, reading back what is stored meanwhile for the progress."""
    work = asyncio.create_task(memory.flush())
    try:
        while not work.done():
            await asyncio.wait({work}, timeout=PROGRESS_SECONDS)
            if not work.done():
                await _show_stored(tally, progress)
        return work.result()
    finally:
        work.cancel()  # only when this import itself was cancelled; done otherwise


async def _store(memory: Memory, records: list[MessageRecord], progress: TerminalProgress) -> _Outcome:
    """Queue ``records``, wait for them, and count what the database holds, with the words of a failure.

    The progress shows what the database holds, read back while the messages are queued and while the last ones are
    written: queued is not stored (the writer and the disk decide how fast messages are kept)."""
    tally = _StoredTally(memory)
    report = FlushReport()
    reason: str | None = None
    try:
        for done, record in enumerate(records, start=1):
            await memory.add(record)
            tally.queued(record.message_id)
            if done % PROGRESS_EVERY == 0:
                progress.update(await tally.update())
        report = await _flush(memory, tally, progress)
    except IngestError as error:  # what was not stored is counted below, and the file's report gives the reason
        report, reason = error.report, error.report.error
    except DatabaseUnavailableError as error:  # the server went away: what it confirmed before counts as stored
        reason = str(error)
    try:
        progress.update(await tally.update())
    except DatabaseUnavailableError as error:
        reason = reason or str(error)
    progress.close()
    rejected = set(report.rejected) & set(tally.waiting)
    # Refused as they were written (an opt-out or a forget during the import): skipped, not failed.
    waiting = set(tally.waiting)
    refused = {message_id: why for message_id, why in
               (await memory.refused([record for record in records if record.message_id in waiting])).items()
               if message_id not in rejected}
    return _Outcome(tally.stored, len(waiting) - len(rejected) - len(refused), len(rejected), reason,
                    report.vectors_pending, report.vectors_error,
                    Counter(SHORT_REASONS.get(why, why) for why in refused.values()))


async def _show_stored(tally: _StoredTally, progress: TerminalProgress) -> None:
    try:
        progress.update(await tally.update())
    except DatabaseUnavailableError as error:  # the writer meets it too, and its failure is the one reported
        log.debug("Progress not read back: %s", error)


async def _import(memory: Memory, path: Path, export: Export, err: TextIO) -> FileReport:
    channel = export.channel
    records = export.records
    stored, deleted = await memory.known_message_ids([record.message_id for record in records])
    # Messages memory holds (or was told are deleted) never reach ingest: a re-import embeds nothing again.
    new = [r for r in records if r.message_id not in stored and r.message_id not in deleted]
    # What memory would not store live (opted out, forgotten, capture off) is skipped here; ingest refuses it too,
    # as it writes, if an opt-out or a forget comes while this file is imported.
    refused = await memory.refused(new)
    to_store = [r for r in new if r.message_id not in refused and stored_content(r.content, r.attachments)]
    skips = Counter(SHORT_REASONS.get(why, why) for why in refused.values())
    skips[SYSTEM_MESSAGE] += export.notices
    skips[DELETED_SINCE] += len(records) - len(stored) - len(new)
    skips[EMPTY] += len(new) - len(refused) - len(to_store)
    outcome = _Outcome(0, 0, 0, None)
    if to_store or stored:
        _note_names(memory, channel)
    if to_store:
        progress = TerminalProgress(terminal_text(f"{channel.guild_name} #{channel.channel_name}"), len(to_store), err)
        outcome = await _store(memory, to_store, progress)
    reason = outcome.reason
    if outcome.not_stored and memory.disk_nearly_full():  # what to do, beside the database's words
        reason = f"the disk holding {memory.db_path} is full; free some space"
    skips.update(outcome.refused or Counter())
    return FileReport(path, f"#{channel.channel_name} (guild {channel.guild_id})", outcome.stored, len(stored),
                      sum(skips.values()), len(export.rejected) + outcome.rejected,
                      outcome.not_stored, reason, outcome.vectors_pending, outcome.vectors_error, _reasons(skips))


def _note_names(memory: Memory, channel: ExportedChannel) -> None:
    """The guild's and channel's names the export was written with, where memory holds none: an export may be
    older than a name the bot has seen since."""
    names = memory.names
    known = names.channel_names(channel.guild_id)
    if channel.guild_name and names.guild_name(channel.guild_id) is None:
        names.note_guild(channel.guild_id, channel.guild_name)
    parent = channel.parent_channel_id
    if parent is not None and channel.parent_channel_name and parent not in known:
        names.note_channel(channel.guild_id, parent, channel.parent_channel_name)
    if channel.channel_name and channel.channel_id not in known:
        names.note_channel(channel.guild_id, channel.channel_id, channel.channel_name, parent)


def _show_rejected(path: Path, export: Export, err: TextIO) -> None:
    for rejected in export.rejected[:MAX_REJECTS_SHOWN]:
        print(terminal_text(f"{path}: message {rejected.message_id} rejected: {rejected.reason}"), file=err)
    if len(export.rejected) > MAX_REJECTS_SHOWN:
        print(terminal_text(f"{path}: ... and {len(export.rejected) - MAX_REJECTS_SHOWN} more rejected"), file=err)


async def import_exports(memory: Memory, paths: Sequence[Path], out: TextIO, err: TextIO) -> int:
    """Import each export; 0 when every message is stored (or was already), 1 when anything was not.

    A file that cannot be read is reported and the next one imported. A write that fails (a locked database, a
    full disk) stops the import: the files after it would fail the same way. Re-running it is always safe.
    """
    reports: list[FileReport] = []
    unreadable = 0
    for position, path in enumerate(paths):
        try:
            export = await asyncio.to_thread(read_export, path)
        except ExportError as error:
            print(f"error: {terminal_text(str(error))}", file=err)
            unreadable += 1
            continue
        _show_rejected(path, export, err)
        try:
            report = await _import(memory, path, export, err)
        except DatabaseUnavailableError as error:  # gone before this file's first message was queued
            report = FileReport(path, f"#{export.channel.channel_name} (guild {export.channel.guild_id})", 0, 0,
                                export.notices, len(export.rejected), len(export.records), str(error),
                                skip_reasons=_reasons(Counter({SYSTEM_MESSAGE: export.notices})))
        reports.append(report)
        print(terminal_text(report.line()), file=out)
        if report.not_stored:
            rest = [str(later) for later in paths[position + 1:]]
            print(terminal_text(f"error: {report.not_stored} messages of {path} were not stored "
                                f"({report.reason or 'see the log'}); what is stored is kept, so run the same import "
                                "again once that is fixed"), file=err)
            if rest:
                print(terminal_text(f"error: stopped before {', '.join(rest)}"), file=err)
            unreadable += len(rest)
            break
    vectors = await _wait_for_vectors(memory) if reports else FlushReport()
    print(terminal_text(_summary(reports, len(paths), unreadable, vectors)), file=out)
    # Messages stored without their vectors are not recalled by meaning yet: not a success either.
    failed = unreadable or any(report.rejected or report.not_stored for report in reports) or vectors.vectors_pending
    return 1 if failed else 0


async def _wait_for_vectors(memory: Memory) -> FlushReport:
    """Each file was acknowledged once stored; the final report waits for the vectors too (every stored message's,
    or as many as a working model gives) and counts what still waits."""
    try:
        return await memory.flush(vectors=True)
    except IngestError as error:  # messages not stored: already reported per file
        return error.report


def _summary(reports: list[FileReport], files: int, not_imported: int, vectors: FlushReport) -> str:
    stored = sum(report.stored for report in reports)
    already = sum(report.already_stored for report in reports)
    skipped = sum(report.skipped for report in reports)
    rejected = sum(report.rejected for report in reports)
    not_stored = sum(report.not_stored for report in reports)
    text = (f"imported {files - not_imported} of {files} file(s): {stored} stored, {already} already stored, "
            f"{skipped} skipped, {rejected} rejected")
    text += f", {not_stored} NOT stored" if not_stored else ""
    if vectors.vectors_pending:  # stored and found by their words; by meaning once embedded
        why = vectors.vectors_error or "see the log"
        text += f"; {vectors.vectors_pending} stored messages wait for their vectors ({why}; they are embedded later)"
    return text
