"""MessageWriter: stores each incoming message in SQLite and FTS5 at once, marked as needing a vector. A failed write
is tried again, then held (and reported) until it works; a message whose data cannot be stored is rejected alone."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ..language import keywords as text
from .channels import ChannelOwners
from .content import clean_text, stored_content
from .report import RetryPolicy, describe
from ..records import MessageRecord
from ..store.rows import NewRow, WriteBatch, to_timestamp
from ..store.protocol import DatabaseUnavailableError, MessageWrites
from .spool import IngestSpool

__all__ = ("BACKLOG_BATCH_SIZE", "MessageWriter", "Tally", "about_data")

log = logging.getLogger(__name__)

_BATCH_WAIT_S = 0.05
# Under a backlog (an import, a burst after a restart) batches grow to this many messages.
BACKLOG_BATCH_SIZE = 1024
# Cleaning text and building FTS documents runs on the event loop, this many messages at a time.
_PREPARE_SLICE = 256
_INT64 = range(-(2**63), 2**63)
_REQUIRED_IDS = ("message_id", "guild_id", "channel_id", "author_id")
_OPTIONAL_IDS = ("parent_channel_id", "reply_to_id")

# Errors about the data written; everything else is the database's. SQLSTATE class 22 is a data exception, 23 an
# integrity constraint violation.
_DATA_ERRORS = (ValueError, TypeError, OverflowError, sqlite3.IntegrityError, sqlite3.ProgrammingError,
                sqlite3.DataError, sqlite3.InterfaceError, sqlite3.NotSupportedError)
_DATA_SQLSTATE_CLASSES = ("22", "23")

# Applied to a held message as it is tried again: None drops it (deleted meanwhile), or it with its edited text.
Admit = Callable[[MessageRecord], MessageRecord | None]
# Message id → why, for those of a batch that live capture would not store now (admission.Admission.refused).
Refuse = Callable[[Sequence[MessageRecord]], Awaitable[dict[int, str]]]


@dataclass(frozen=True, slots=True)
class _Queued:
    seq: int
    record: MessageRecord
    held: bool = False  # its write failed before: deletes and edits that came since apply to it


@dataclass(frozen=True, slots=True)
class _Row:
    """A message ready for SQLite: the text stored for it and its FTS5 document."""

    seq: int
    record: MessageRecord
    content: str
    fts_body: str


@dataclass(slots=True)
class Tally:
    """Messages stored, skipped (already stored, deleted, empty) and rejected (ids), since the last ``take``."""

    stored: int = 0
    skipped: int = 0
    rejected: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Outcome:
    """What one write did; counted only once its transaction has committed."""

    stored: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    rejected: list[tuple[_Queued, str]] = field(default_factory=list)
    rowids: list[int] = field(default_factory=list)


def about_data(error: BaseException) -> bool:
    """Whether ``error`` says a message's data cannot be stored (a value out of range, a constraint), rather than
    that the database failed (a lock, a full disk, a lost connection, anything unknown): that is tried again."""
    if isinstance(error, _DATA_ERRORS):
        return True
    sqlstate = getattr(error, "sqlstate", None)  # PostgreSQL's (asyncpg's) error classes
    return isinstance(sqlstate, str) and sqlstate[:2] in _DATA_SQLSTATE_CLASSES


def _storable(record: MessageRecord) -> MessageRecord:
    """``record`` as SQLite takes it (a display name without lone surrogates); ValueError if it cannot be stored."""
    for name in _REQUIRED_IDS + _OPTIONAL_IDS:
        value = getattr(record, name)
        if value is None and name in _OPTIONAL_IDS:
            continue
        if not isinstance(value, int) or value not in _INT64:
            raise ValueError(f"{name} {value!r} is not a 64-bit integer")
    to_timestamp(record.created_at)
    if record.edited_at is not None:
        to_timestamp(record.edited_at)
    author_name = clean_text(record.author_name)
    return record if author_name == record.author_name else dataclasses.replace(record, author_name=author_name)


class MessageWriter:
    """The first ingest stage and the only writer of new messages; ``write_lock`` is shared with every other writer.

    ``stored(rowids)`` is called after each commit that stored messages (the vector filler's cue). With a ``spool``
    (PostgreSQL), messages whose write failed, and those that come while it fails, are kept in it until stored, and
    what an earlier run kept there is stored first.
    """

    def __init__(self, store: MessageWrites, write_lock: asyncio.Lock, admit: Admit,
                 stored: Callable[[list[int]], None], retry: RetryPolicy, *, batch_size: int,
                 queue_size: int, spool: IngestSpool | None = None, refuse: Refuse | None = None) -> None:
        self._store = store
        self._write_lock = write_lock
        self._admit = admit
        self.refuse = refuse
        self._on_stored = stored
        self._retry = retry
        self.batch_size = batch_size
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue(queue_size)
        self._enqueued = 0
        # Every message added and not yet stored, skipped or rejected (seq → message), oldest first.
        self._outstanding: dict[int, MessageRecord] = {}
        # Messages whose write failed: tried again after a pause, or at once when a flush asks.
        self._held: list[_Queued] = []
        self._retry_now = asyncio.Event()
        self._tried = 0  # every message up to this seq was tried at least once
        self._tries = 0
        self._failures = 0  # failed tries in a row
        self.error: str | None = None  # why the last try failed, while messages are held
        self._store_logs = False  # the failure is a lost server: the store logs that outage (postgres/faults.py)
        self._progress = asyncio.Condition()
        self._tally = Tally()
        self._stored_any = False  # whether the current write stored a message: proof the database works
        self._spool = spool
        self._spooled: dict[int, int] = {}  # seq → spool id of each message kept in the spool
        self._unspool: list[int] = []  # spool ids of messages stored (or dropped) since, to forget there
        self._channels = ChannelOwners(store)  # a channel id stored under another guild is refused

    @property
    def enqueued(self) -> int:
        return self._enqueued

    @property
    def waiting(self) -> int:
        """Messages added and not stored yet (queued, being written, or held after a failed write)."""
        return len(self._outstanding)

    def take_tally(self) -> Tally:
        tally, self._tally = self._tally, Tally()
        return tally

    async def add(self, record: MessageRecord) -> None:
        """Queue a message; waits while the queue is full (backpressure)."""
        self._enqueued += 1
        self._outstanding[self._enqueued] = record
        await self._queue.put(_Queued(self._enqueued, record))

    async def settle(self, target: int) -> None:
        """Return once every message added up to ``target`` was tried; held messages get one more try first."""
        async with self._progress:
            if self._held:
                tries = self._tries
                self._retry_now.set()
                await self._progress.wait_for(lambda: self._tries > tries)
            await self._progress.wait_for(lambda: self._tried >= target)

    def unresolved(self, target: int) -> tuple[int, ...]:
        """Ids of the messages added up to ``target`` that are not stored (nor skipped or rejected)."""
        ids = []
        for seq, record in self._outstanding.items():
            if seq > target:
                break
            ids.append(record.message_id)
        return tuple(ids)

    def newest_outstanding(self, guild_id: int, channel_id: int | None, before: datetime) -> int | None:
        """The id of the newest message added and not stored yet of the guild (or one channel), among those
        created before ``before``."""
        return max((record.message_id for record in self._outstanding.values()
                    if record.guild_id == guild_id and channel_id in (None, record.channel_id)
                    and record.created_at < before), default=None)

    async def run(self) -> None:
        await self._replay()
        while True:
            await self._write_all(await self._take())

    async def close(self) -> None:
        if self._spool is not None:
            await self._spool.close()

    # -- the spool ------------------------------------------------------------------------------------------

    async def _replay(self) -> None:
        """What an earlier run kept in the spool (the database was away when it stopped) is tried first."""
        for spool_id, record in await self._spool.replay() if self._spool is not None else []:
            self._enqueued += 1
            self._outstanding[self._enqueued] = record
            self._spooled[self._enqueued] = spool_id
            self._held.append(_Queued(self._enqueued, record, held=True))

    async def _keep_held(self) -> None:
        """Keep held messages in the spool (durable once this returns), and forget there what is stored."""
        if self._spool is None:
            return
        new = [item for item in self._held if item.seq not in self._spooled]
        done, self._unspool = self._unspool, []
        ids = await self._spool.keep([item.record for item in new], done) if new or done else []
        if ids is None:  # kept in memory meanwhile, and tried again
            self._unspool = done + self._unspool
            return
        self._spooled.update((item.seq, spool_id) for item, spool_id in zip(new, ids, strict=True))

    # -- taking work ----------------------------------------------------------------------------------------

    async def _take(self) -> list[_Queued]:
        if not self._held:
            return await self._next_batch()
        await self._wait_to_retry()
        self._retry_now.clear()
        items, self._held = self._held, []
        # What was queued meanwhile is tried with them, so a flush waits for one try, not for the database.
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items

    async def _wait_to_retry(self) -> None:
        """Wait out the pause before the next try (or a flush's call); with a spool, what comes meanwhile is held
        and kept there at once, so capture goes on while the database is away."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._retry.delay(self._failures)
        while (remaining := deadline - loop.time()) > 0 and not self._retry_now.is_set():
            if self._spool is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._retry_now.wait(), remaining)
                return
            arrival = asyncio.ensure_future(self._queue.get())
            retry = asyncio.ensure_future(self._retry_now.wait())
            try:
                await asyncio.wait({arrival, retry}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            finally:
                retry.cancel()
                if not arrival.done():
                    arrival.cancel()  # a get cancelled before it completes takes nothing from the queue
            if arrival.done() and not arrival.cancelled():
                arrived = [arrival.result()]
                while not self._queue.empty():
                    arrived.append(self._queue.get_nowait())
                self._hold(arrived)
                await self._keep_held()

    async def _next_batch(self) -> list[_Queued]:
        """Up to ``batch_size`` messages within ``_BATCH_WAIT_S``, or a wide batch under a backlog."""
        items = [await self._queue.get()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _BATCH_WAIT_S
        backlog = self._queue.qsize() >= self.batch_size
        limit = max(self.batch_size, BACKLOG_BATCH_SIZE) if backlog else self.batch_size
        while len(items) < limit:
            if self._queue.empty():
                timeout = deadline - loop.time()
                if len(items) >= self.batch_size or timeout <= 0:
                    break
                try:
                    items.append(await asyncio.wait_for(self._queue.get(), timeout))
                except TimeoutError:
                    break
            else:
                items.append(self._queue.get_nowait())
        return items

    # -- writing --------------------------------------------------------------------------------------------

    async def _write_all(self, items: list[_Queued]) -> None:
        """Store ``items``: tried again after a database failure, split after a data failure, held if it fails."""
        self._stored_any = False
        suspects: list[tuple[_Queued, Exception]] = []
        error = await self._try(items, self._retry.write_attempts)
        if error is not None and not about_data(error):
            self._hold(items)
        elif error is not None:
            error = await self._split(items, error, suspects)
        if suspects and self._stored_any:
            self._count(_Outcome(rejected=[(item, describe(cause)) for item, cause in suspects]))
        elif suspects:  # no other message went in: nothing shows the fault is theirs, so they are tried again
            self._hold([item for item, _ in suspects])
            error = error or suspects[0][1]
        self._held.sort(key=lambda item: item.seq)
        await self._keep_held()
        async with self._progress:
            self._tries += 1
            self._tried = max(self._tried, items[-1].seq)
            if self._held:
                self._failures += 1
                if error is not None:
                    self.error, self._store_logs = describe(error), isinstance(error, DatabaseUnavailableError)
                # One line per outage, not one per try, and none where the store logs it: the next says when it ends.
                log.log(logging.WARNING if self._failures == 1 and not self._store_logs else logging.DEBUG,
                        "Storing %d messages failed (%s); they are kept and tried again in %.1f s",
                        len(self._held), self.error, self._retry.delay(self._failures))
            else:
                if self._failures:
                    log.log(logging.DEBUG if self._store_logs else logging.INFO,
                            "Storing messages works again (after %d failed tries)", self._failures)
                self._failures, self.error = 0, None
            self._progress.notify_all()

    async def _try(self, items: list[_Queued], attempts: int) -> Exception | None:
        """Write ``items`` in one transaction, up to ``attempts`` times while the database fails; the last error, or
        None once written."""
        error: Exception | None = None
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(self._retry.delay(attempt))
            try:
                async with self._write_lock:
                    outcome = await self._write(items)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = exc
                log.debug("Storing %d messages failed (try %d): %s", len(items), attempt + 1, describe(exc))
                if about_data(exc):
                    await self._reload_next_rowid()  # in case another process took these row ids
                    return exc
                continue
            self._count(outcome)
            return None
        return error

    async def _split(self, items: list[_Queued], error: Exception,
                     suspects: list[tuple[_Queued, Exception]]) -> Exception | None:
        """After a data error: store each half on its own, down to the messages that fail alone (``suspects``).

        Returns the database error that held some messages back, if one did.
        """
        if len(items) == 1:
            suspects.append((items[0], error))
            return None
        held_by: Exception | None = None
        half = len(items) // 2
        for part in (items[:half], items[half:]):
            part_error = await self._try(part, 1)
            if part_error is None:
                continue
            if about_data(part_error):
                held_by = await self._split(part, part_error, suspects) or held_by
            else:
                self._hold(part)
                held_by = part_error
        return held_by

    async def _reload_next_rowid(self) -> None:
        """Another process may have taken the row ids this write used."""
        try:
            await self._store.reload_next_rowid()
        except Exception:  # noqa: BLE001 - the database fails again: the next try says how
            log.debug("Reading the highest row id failed", exc_info=True)

    def _hold(self, items: list[_Queued]) -> None:
        self._held.extend(_Queued(item.seq, item.record, held=True) for item in items)

    async def _write(self, items: list[_Queued]) -> _Outcome:
        outcome = _Outcome()
        rows: dict[int, _Row] = {}
        for start in range(0, len(items), _PREPARE_SLICE):
            if start:
                await asyncio.sleep(0)  # let the event loop run between slices of text work
            for item in items[start : start + _PREPARE_SLICE]:
                try:
                    row = self._prepare(item)
                except Exception as exc:  # noqa: BLE001 - any error in one message's data rejects that message
                    outcome.rejected.append((item, describe(exc)))
                    continue
                if row is None:
                    outcome.skipped.append(item.seq)
                    continue
                earlier = rows.pop(row.record.message_id, None)  # the later copy of a message wins
                if earlier is not None:
                    outcome.skipped.append(earlier.seq)
                rows[row.record.message_id] = row
        stored, deleted = await self._store.known_message_ids(list(rows))
        # The one admission rule, checked as the batch is written: whatever the message came through.
        refused = await self.refuse([row.record for row in rows.values()]) if self.refuse and rows else {}
        new: list[_Row] = []
        for message_id, row in rows.items():
            if message_id in deleted:
                log.debug("Message %d was deleted before it was stored; dropped", message_id)
            elif message_id in refused and message_id not in stored:
                log.debug("Message %d is not stored: %s", message_id, refused[message_id])
            if message_id in stored or message_id in deleted or message_id in refused:
                outcome.skipped.append(row.seq)
            else:
                new.append(row)
        collided = await self._channels.collisions([row.record for row in new]) if new else {}
        for row in (row for row in new if row.record.message_id in collided):
            outcome.rejected.append((_Queued(row.seq, row.record), collided[row.record.message_id]))
        new = [row for row in new if row.record.message_id not in collided]
        if new:
            outcome.rowids = list(self._store.allocate_rowids(len(new)))
            batch = WriteBatch(inserts=[NewRow(rowid, row.record, row.content, row.fts_body)
                                        for rowid, row in zip(outcome.rowids, new, strict=True)],
                               pending=outcome.rowids, successors_of=outcome.rowids)
            await self._store.write(batch)
            self._channels.stored([row.record for row in new])
        outcome.stored = [row.seq for row in new]
        return outcome

    def _prepare(self, item: _Queued) -> _Row | None:
        # A delete that comes after an add waits for its first try and deletes what it stored; a held message
        # is past that point, so the delete (and an edit) is applied to it here.
        record = self._admit(item.record) if item.held else item.record
        if record is None:
            log.debug("Message %d was deleted before it was stored; dropped", item.record.message_id)
            return None
        content = stored_content(record.content, record.attachments)
        if not content:
            log.debug("Message %d has no text or attachments; not stored", record.message_id)
            return None
        return _Row(item.seq, _storable(record), content, text.fts_document(content))

    def _count(self, outcome: _Outcome) -> None:
        for seq in outcome.stored + outcome.skipped + [item.seq for item, _ in outcome.rejected]:
            if seq in self._spooled:
                self._unspool.append(self._spooled.pop(seq))
        for seq in outcome.stored + outcome.skipped:
            self._outstanding.pop(seq, None)
        for item, reason in outcome.rejected:
            self._outstanding.pop(item.seq, None)
            log.error("Message %s cannot be stored and is dropped: %s", item.record.message_id, reason)
            self._tally.rejected.append(item.record.message_id)
        self._tally.stored += len(outcome.stored)
        self._tally.skipped += len(outcome.skipped)
        if outcome.rowids:
            self._stored_any = True
            self._on_stored(outcome.rowids)
