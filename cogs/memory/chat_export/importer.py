"""Imports DiscordChatExporter exports into memory file by file, a batch of messages at a time, and reports what each
one stored.

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

from .feed import ExportFeed
from .reader import ExportBatch, ExportedChannel, ExportError, ReadStopped
from ..ingest.queue import FlushReport, IngestError, stored_content
from ..memory import Memory
from ..privacy.admission import SHORT_REASONS
from ..records import MessageRecord
from ..runtime.progress import TerminalProgress
from ..runtime.safe_text import terminal_text
from ..store.protocol import DatabaseUnavailableError

__all__ = ("INTERRUPTED", "FileReport", "import_exports")

log = logging.getLogger(__name__)

# Messages read from a file and handed to ingest at a time.
BATCH_SIZE = 1000
# Every this many messages queued, the import waits until they are stored: a write that fails stops the file within
# this many, and no more wait in memory for a database that is failing.
FLUSH_EVERY = 10_000
# While the last messages are written, the count of stored messages is read back for the progress this often.
PROGRESS_SECONDS = 2.0
# Rejected messages listed one per line for each file; past this, a count.
MAX_REJECTS_SHOWN = 10
# The exit status of an import that Ctrl-C stopped (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class FileReport:
    """What one export came to; the counts add up to the file's messages read. ``skipped``: not meant to be stored,
    for the reasons in ``skip_reasons`` (system notices, bots, opted out, forgotten, deleted on Discord since,
    nothing to remember). ``not_stored``: messages memory should have stored and did not (a write failed; ``reason``
    says why). ``stopped_after``: the messages read when the import left the file before its end (of ``messages``)."""

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
    messages: int = 0
    stopped_after: int | None = None
    interrupted: bool = False
    # Why the file could not be read to its end (it changed while it was read), as an ``error:`` line says it.
    error: str | None = None

    def line(self) -> str:
        why = ", ".join(f"{count} {_plural(reason, count)}" for reason, count in self.skip_reasons)
        text = (f"{self.path}: {self.channel}: {self.stored} stored, {self.already_stored} already stored, "
                f"{self.skipped} skipped{f' ({why})' if why else ''}, {self.rejected} rejected")
        if self.not_stored:
            text += f", {self.not_stored} NOT stored ({self.reason or 'see the log above'})"
        if self.stopped_after is not None:
            text += (f"; {'interrupted' if self.interrupted else 'stopped'} after message {self.stopped_after} "
                     f"of {self.messages}")
        return text


# The reasons a message of an export is skipped besides the admission rule's (SHORT_REASONS).
SYSTEM_MESSAGE = "system message"
DELETED_SINCE = "deleted since"
EMPTY = "empty"


def _plural(reason: str, count: int) -> str:
    return f"{reason}s" if reason == SYSTEM_MESSAGE and count != 1 else reason


def _reasons(skips: Counter[str]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((reason, count) for reason, count in skips.items() if count), key=lambda p: (-p[1], p[0])))


def _label(channel: ExportedChannel) -> str:
    return f"#{channel.channel_name} (guild {channel.guild_id})"


class _StoredTally:
    """Counts the queued messages the database holds so far, by asking it."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory
        self._waiting: dict[int, MessageRecord] = {}
        self.stored = 0

    def queued(self, record: MessageRecord) -> None:
        self._waiting[record.message_id] = record

    async def update(self) -> int:
        stored, _ = await self._memory.known_message_ids(list(self._waiting))
        for message_id in stored:
            del self._waiting[message_id]
        self.stored += len(stored)
        return self.stored

    @property
    def waiting(self) -> list[MessageRecord]:
        """The queued messages the database does not hold (yet)."""
        return list(self._waiting.values())


class _FileImport:
    """One export's messages as they come, batch by batch: what memory holds already and what it would not store are
    counted, the rest queued for ingest, while the progress reads back what the database holds (queued is not
    stored: the writer and the disk decide how fast messages are kept)."""

    def __init__(self, memory: Memory, path: Path, channel: ExportedChannel, err: TextIO) -> None:
        self._memory, self._path, self._channel, self._err = memory, path, channel, err
        self._tally = _StoredTally(memory)
        self._progress: TerminalProgress | None = None
        self._skips: Counter[str] = Counter()
        self._already = 0
        self._rejected = 0  # by the reader: messages of the export that cannot be read
        self._ingest_rejected: set[int] = set()  # by ingest, for their data
        self._queued = 0  # since the last flush
        self._named = False
        self._report = FlushReport()
        self.failed = False  # a write failed: the file is left there
        self.reason: str | None = None  # why, where that is known
        self.read = 0

    async def take(self, batch: ExportBatch) -> None:
        """Count and queue ``batch``; with every ``FLUSH_EVERY`` messages queued, wait until they are stored."""
        self._show_rejected(batch)
        self._rejected += len(batch.rejected)
        self._skips[SYSTEM_MESSAGE] += batch.notices
        try:
            await self._queue(batch.records)
            self.read = batch.read
            if self._queued >= FLUSH_EVERY:
                await self._flush()
            else:
                await self._show_stored()
        except DatabaseUnavailableError as error:  # the server went away: what it confirmed before counts
            self.failed, self.reason = True, str(error)

    async def _queue(self, records: list[MessageRecord]) -> None:
        memory = self._memory
        stored, deleted = await memory.known_message_ids([record.message_id for record in records])
        # Messages memory holds (or was told are deleted) never reach ingest: a re-import embeds nothing again.
        new = [r for r in records if r.message_id not in stored and r.message_id not in deleted]
        # What memory would not store live (opted out, forgotten, capture off) is skipped here; ingest refuses it
        # too, as it writes, if an opt-out or a forget comes while this file is imported.
        refused = await memory.refused(new)
        to_store = [r for r in new if r.message_id not in refused and stored_content(r.content, r.attachments)]
        self._skips.update(SHORT_REASONS.get(why, why) for why in refused.values())
        self._skips[DELETED_SINCE] += len(records) - len(stored) - len(new)
        self._skips[EMPTY] += len(new) - len(refused) - len(to_store)
        self._already += len(stored)
        if (to_store or stored) and not self._named:
            _note_names(memory, self._channel)
            self._named = True
        if to_store and self._progress is None:
            self._progress = TerminalProgress(
                terminal_text(f"{self._channel.guild_name} #{self._channel.channel_name}"),
                self._channel.message_count, self._err)
        for record in to_store:
            await memory.add(record)
            self._tally.queued(record)
        self._queued += len(to_store)

    async def _flush(self) -> None:
        """``memory.flush()``, reading back what is stored meanwhile for the progress; a write that failed is the
        file's ``reason``, and messages ingest rejected for their data are counted."""
        self._queued = 0
        work = asyncio.create_task(self._memory.flush())
        try:
            while not work.done():
                await asyncio.wait({work}, timeout=PROGRESS_SECONDS)
                if not work.done():
                    await self._show_stored()
            self._report = work.result()
        except IngestError as error:
            self._report = error.report
            self._ingest_rejected.update(error.report.rejected)
            if error.report.not_stored:  # what was not stored is counted at the end; the reason is the file's
                self.failed, self.reason = True, error.report.error
        finally:
            work.cancel()  # only when this import itself was cancelled; done otherwise
        await self._show_stored()

    async def _show_stored(self) -> None:
        try:
            stored = await self._tally.update()
        except DatabaseUnavailableError as error:  # the writer meets it too, and its failure is the one reported
            log.debug("Progress not read back: %s", error)
            return
        if self._progress is not None:
            self._progress.update(self._done(stored))

    def _done(self, stored: int) -> int:
        """The file's messages dealt with: stored (read back), or never to be stored by this import."""
        return stored + self._already + sum(self._skips.values()) + self._rejected

    def _show_rejected(self, batch: ExportBatch) -> None:
        room = max(MAX_REJECTS_SHOWN - self._rejected, 0)
        for rejected in batch.rejected[:room]:
            print(terminal_text(f"{self._path}: message {rejected.message_id} rejected: {rejected.reason}"),
                  file=self._err)

    async def finish(self, *, interrupted: bool = False, error: str | None = None) -> FileReport:
        """Wait for what was queued (however the file ended), and say what the file came to."""
        if self._rejected > MAX_REJECTS_SHOWN:
            print(terminal_text(f"{self._path}: ... and {self._rejected - MAX_REJECTS_SHOWN} more rejected"),
                  file=self._err)
        if self._queued and not self.failed:
            try:
                await self._flush()
            except DatabaseUnavailableError as failure:
                self.failed, self.reason = True, str(failure)
        try:
            await self._tally.update()
        except DatabaseUnavailableError as failure:
            self.reason = self.reason or str(failure)
        if self._progress is not None:
            self._progress.update(self._done(self._tally.stored))
            self._progress.close()
        waiting = self._tally.waiting
        rejected = self._ingest_rejected & {record.message_id for record in waiting}
        # Refused as they were written (an opt-out or a forget during the import): skipped, not failed.
        try:
            refused = {message_id: why for message_id, why in (await self._memory.refused(waiting)).items()
                       if message_id not in rejected}
        except DatabaseUnavailableError as failure:
            refused, self.reason = {}, self.reason or str(failure)
        self._skips.update(SHORT_REASONS.get(why, why) for why in refused.values())
        reason = self.reason
        not_stored = len(waiting) - len(rejected) - len(refused)
        if not_stored and self._memory.disk_nearly_full():  # what to do, beside the database's words
            reason = f"the disk holding {self._memory.db_path} is full; free some space"
        messages = self._channel.message_count
        return FileReport(self._path, _label(self._channel), self._tally.stored, self._already,
                          sum(self._skips.values()), self._rejected + len(rejected), not_stored, reason,
                          self._report.vectors_pending, self._report.vectors_error, _reasons(self._skips),
                          messages, self.read if self.read < messages else None, interrupted, error)


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


async def _import(memory: Memory, feed: ExportFeed, err: TextIO, stop: asyncio.Event) -> FileReport:
    importing = _FileImport(memory, feed.path, feed.channel, err)
    error: str | None = None
    try:
        while not stop.is_set() and not importing.failed and (batch := await feed.next()) is not None:
            await importing.take(batch)
    except ExportError as failure:  # the file changed after it was checked: what was read is still stored
        error = str(failure)
    feed.stop()  # the rest of the file is not wanted (at its end already, unless stopped or failed)
    return await importing.finish(interrupted=stop.is_set(), error=error)


async def import_exports(memory: Memory, paths: Sequence[Path], out: TextIO, err: TextIO,
                         stop: asyncio.Event | None = None) -> int:
    """Import each export; 0 when every message is stored (or was already), 1 when anything was not, and
    ``INTERRUPTED`` once ``stop`` is set (Ctrl-C): the file being read is left after the batch in hand, what was
    handed to ingest is stored, and a summary says where it stopped.

    A file that cannot be read is reported and the next one imported. A write that fails (a locked database, a
    full disk) stops the import: the files after it would fail the same way. Re-running it is always safe.
    """
    stop = asyncio.Event() if stop is None else stop
    reports: list[FileReport] = []
    unreadable = 0
    left = 0  # the first file not read yet
    for position, path in enumerate(paths):
        if stop.is_set():
            break
        try:
            async with ExportFeed(path, BATCH_SIZE, stop) as feed:
                report = await _import(memory, feed, err, stop)
        except ExportError as error:
            print(f"error: {terminal_text(str(error))}", file=err)
            unreadable, left = unreadable + 1, position + 1
            continue
        except ReadStopped:  # while the file was checked: nothing of it was read
            break
        reports.append(report)
        left = position + 1
        print(terminal_text(report.line()), file=out)
        if report.error:
            print(f"error: {terminal_text(report.error)}", file=err)
            unreadable += 1
        if report.not_stored:
            rest = [str(later) for later in paths[position + 1:]]
            print(terminal_text(f"error: {report.not_stored} messages of {path} were not stored "
                                f"({report.reason or 'see the log'}); what is stored is kept, so run the same import "
                                "again once that is fixed"), file=err)
            if rest:
                print(terminal_text(f"error: stopped before {', '.join(rest)}"), file=err)
            unreadable += len(rest)
            break
    vectors = FlushReport()
    if reports and not stop.is_set():
        vectors = await _wait_for_vectors(memory, stop)
    if stop.is_set():
        print(terminal_text(_interrupted(reports, len(paths), paths[left:], vectors)), file=out)
        return INTERRUPTED
    print(terminal_text(_summary(reports, len(paths), unreadable, vectors)), file=out)
    # Messages stored without their vectors are not recalled by meaning yet: not a success either.
    failed = unreadable or any(report.rejected or report.not_stored for report in reports) or vectors.vectors_pending
    return 1 if failed else 0


def _interrupted(reports: list[FileReport], files: int, not_read: Sequence[Path], vectors: FlushReport) -> str:
    """The summary of an import Ctrl-C stopped: what it stored, which files it did not read, how to go on."""
    whole = sum(report.stopped_after is None and not report.error for report in reports)
    pending = vectors.vectors_pending or (reports[-1].vectors_pending if reports else 0)
    text = f"interrupted: {whole} of {files} file(s) imported whole: {_counts(reports)}"
    if not_read:
        text += f"; not read: {', '.join(map(str, not_read))}"
    if pending:
        text += f"; {pending} stored messages wait for their vectors (they are embedded later)"
    return text + "; what is stored is kept: run the same import again to go on"


async def _wait_for_vectors(memory: Memory, stop: asyncio.Event) -> FlushReport:
    """Each file was acknowledged once stored; the final report waits for the vectors too (every stored message's,
    or as many as a working model gives) and counts what still waits. ``stop`` ends the wait: the vectors are
    durable work, embedded after the next start."""
    work = asyncio.ensure_future(memory.flush(vectors=True))
    halt = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({work, halt}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        halt.cancel()
        if not work.done():
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        return FlushReport(vectors_pending=await memory.vectors_pending())
    try:
        return work.result()
    except IngestError as error:  # messages not stored: already reported per file
        return error.report


def _counts(reports: list[FileReport]) -> str:
    stored = sum(report.stored for report in reports)
    already = sum(report.already_stored for report in reports)
    skipped = sum(report.skipped for report in reports)
    rejected = sum(report.rejected for report in reports)
    not_stored = sum(report.not_stored for report in reports)
    text = f"{stored} stored, {already} already stored, {skipped} skipped, {rejected} rejected"
    return text + (f", {not_stored} NOT stored" if not_stored else "")


def _summary(reports: list[FileReport], files: int, not_imported: int, vectors: FlushReport) -> str:
    text = f"imported {files - not_imported} of {files} file(s): {_counts(reports)}"
    if vectors.vectors_pending:  # stored and found by their words; by meaning once embedded
        why = vectors.vectors_error or "see the log"
        text += f"; {vectors.vectors_pending} stored messages wait for their vectors ({why}; they are embedded later)"
    return text
