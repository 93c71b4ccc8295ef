"""IngestQueue: every change to memory goes through here, in order. New messages are stored at once (SQLite, FTS5:
keyword-searchable and durable) and get their vectors in the background; edits and deletes keep SQLite, FTS5 and
FAISS in step."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime

import numpy as np

from ..language import keywords as text
from .content import ATTACHMENT_PREFIX, edited_content, stored_content
from ..vectors.embedding import Embedder
from .report import FlushReport, IngestError, RetryPolicy
from .writer import MessageWriter, Refuse
from .spool import IngestSpool
from ..records import MessageRecord
from ..store.rows import ChannelMessage, EditRow, RowRef, WriteBatch, to_timestamp
from ..store.protocol import DatabaseUnavailableError, IngestStore
from .tombstones import TOMBSTONE_DAYS, PendingEdits, Tombstones
from .filler import VectorFiller
from ..store.protocol import VectorIndexes
from ..vectors.stored import VectorSource, stored_vectors

__all__ = ("ATTACHMENT_PREFIX", "FlushReport", "IngestError", "IngestQueue", "RetryPolicy", "stored_content")

log = logging.getLogger(__name__)

# Old tombstones are pruned on open and then at most this often, by a delete.
_PRUNE_EVERY_S = 3600.0
# A close that leaves messages unstored names at most this many of them in its log line.
_NAMED_AT_CLOSE = 20


class IngestQueue:
    """New messages pass two stages: ``MessageWriter`` stores them (a restart finds whatever still needs a
    vector), then ``VectorFiller`` embeds each (vectors.stored_vectors).

    Every write takes ``write_lock``. Edits and deletes first wait until every add queued before them was tried,
    then run under the lock, so a queued add is never lost, reordered or resurrected. A delete that comes before
    its add leaves a tombstone, and the add is dropped; an edit that comes before its add is kept, and the add
    stores the edited text.
    """

    def __init__(self, store: IngestStore, embedder: Embedder, indexes: VectorIndexes, *, batch_size: int = 64,
                 queue_size: int = 1024, retry: RetryPolicy = RetryPolicy(),
                 spool: IngestSpool | None = None) -> None:
        self._store = store
        self._embedder = embedder
        self._indexes = indexes
        self.write_lock = asyncio.Lock()
        self._tombstones = Tombstones()
        self._pending_edits = PendingEdits()
        self._next_prune = 0.0
        self._writer = MessageWriter(store, self.write_lock, self._admit, self._stored, retry,
                                     batch_size=batch_size, queue_size=queue_size, spool=spool)
        self._filler = VectorFiller(store, self.write_lock, embedder, indexes, retry)
        self._tasks: list[asyncio.Task[None]] = []
        self._embedding = False
        self._reported: set[int] = set()  # ids a flush's IngestError named: their caller says so, not close

    def start(self, *, embed: bool = True) -> None:
        """Start storing (and, with ``embed``, embedding) in the background. Without ``embed`` (a read-only
        command), stored messages without a vector wait for the bot or the next start, which embed them."""
        self._tasks = [asyncio.create_task(self._writer.run(), name="memory-ingest-store")]
        self._embedding = embed
        if embed:
            self._tasks += [asyncio.create_task(self._filler.run_embedding(), name="memory-ingest-embed"),
                            asyncio.create_task(self._filler.run_writing(), name="memory-ingest-vectors")]
            self._filler.marked()  # whatever an earlier run left waiting for its vector

    @property
    def queued(self) -> int:
        """Messages not stored yet, and stored ones still waiting for their vector."""
        return self._writer.waiting + self._filler.backlog

    @property
    def batch_size(self) -> int:
        """How many queued messages are written in one transaction."""
        return self._writer.batch_size

    def admit_by(self, refuse: Refuse) -> None:
        """The admission rule (``privacy.admission.Admission.refused``) every message is checked against as it is
        written."""
        self._writer.refuse = refuse

    def use(self, embedder: Embedder, indexes: VectorIndexes, batch_size: int) -> None:
        """Switch model and indexes; call with ``write_lock`` held (vectors in flight are computed again)."""
        self._embedder, self._indexes, self._writer.batch_size = embedder, indexes, batch_size
        self._filler.use(embedder, indexes)

    async def add(self, record: MessageRecord) -> None:
        """Queue a message; waits while the queue is full (backpressure). A deleted message is dropped here."""
        if self._tombstones.covers(record):
            log.debug("Message %d was deleted before it was stored; dropped", record.message_id)
            return
        await self._writer.add(self._pending_edits.apply(record))

    def newest_queued(self, guild_id: int, channel_id: int | None, before: datetime) -> int | None:
        """The id of the newest message of the guild (or of one channel) created before ``before`` that was added
        and is not stored yet: queued, being written, or held after a failed write. Ask before reading the store:
        a message added by then is in one or the other."""
        return self._writer.newest_outstanding(guild_id, channel_id, before)

    def _admit(self, record: MessageRecord) -> MessageRecord | None:
        """Checked again as the message is written: a delete or an edit may have come since it was queued."""
        return None if self._tombstones.covers(record) else self._pending_edits.apply(record)

    def _stored(self, rowids: list[int]) -> None:
        self._filler.changed()  # a message stored before one it precedes changes that one's vector
        self._filler.marked(len(rowids))

    async def flush(self, *, vectors: bool = False) -> FlushReport:
        """Return once every message queued before this call is stored: in the database, keyword-searchable, and
        durable (a restart embeds whatever still waits for its vector). ``vectors_pending`` says how many stored
        messages, anyone's, wait for a vector.

        With ``vectors``, also wait until every message waiting for a vector (the backlog of every caller, not
        only this one's) has it, or until the model is failing; an import's final report asks for that. Without
        embedding (``start(embed=False)``) it does not wait.

        Raises ``IngestError`` (with the report) when some of them were not stored: a write that still failed
        after its retries, or a message whose data cannot be stored.
        """
        report = await self.settle(vectors=vectors)
        if not report.complete:
            self._reported.update(report.not_stored)
            raise IngestError(report)
        return report

    async def settle(self, *, vectors: bool = False) -> FlushReport:
        """``flush`` without raising: the report says what was not stored."""
        target = self._writer.enqueued
        await self._writer.settle(target)
        not_stored = self._writer.unresolved(target)
        if vectors and self._embedding and not not_stored:
            await self._filler.settle()
        try:
            waiting, vectors_error = (await self._store.pending_count())[0], self._filler.failure
        except DatabaseUnavailableError as error:  # the server went away: what this process last counted
            waiting, vectors_error = self._filler.backlog, str(error)
        tally = self._writer.take_tally()
        return FlushReport(stored=tally.stored, skipped=tally.skipped, rejected=tuple(tally.rejected),
                           not_stored=not_stored, error=self._writer.error if not_stored else None,
                           vectors_pending=waiting, vectors_rejected=tuple(self._filler.take_rejected()),
                           vectors_error=vectors_error if waiting else None)

    async def close(self) -> None:
        """Store what is queued (as far as the database allows), then stop; never raises for what could not be
        stored: that is logged. The vector backlog is not waited for: it is durable, and the next start embeds it
        (a model batch in flight is dropped and computed again then)."""
        try:
            report = await self.settle()
        except Exception:  # noqa: BLE001 - closing goes on whatever failed
            log.exception("Finishing ingest before closing failed")
        else:
            if report.vectors_pending:
                log.info("Closing with %d stored messages waiting for their vectors; they are embedded after the "
                         "next start", report.vectors_pending)
            # One line per event: those a flush already reported (to a CLI command, an import) are its to say.
            not_stored = [message_id for message_id in report.not_stored if message_id not in self._reported]
            if not_stored:
                named = ", ".join(map(str, not_stored[:_NAMED_AT_CLOSE]))
                log.error("Closing with %d messages not stored (%s): %s%s", len(not_stored), report.error,
                          named, ", ..." if len(not_stored) > _NAMED_AT_CLOSE else "")
        finally:
            # Under the lock: no vector write is cut between the database and the index it keeps in step.
            async with self.write_lock:
                for task in self._tasks:
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
            self._tasks = []
            await self._writer.close()

    async def _after_queued(self) -> None:
        """Wait until every add queued before now was tried (stored, dropped, or held after a failed write)."""
        await self._writer.settle(self._writer.enqueued)

    # -- edits and deletes ----------------------------------------------------------------------------------

    async def edit(self, message_id: int, content: str, edited_at: datetime | None) -> bool:
        """Re-store and re-embed an edited message; False if it is not stored.

        Only the edited message is embedded again: a vector is the message alone (vectors/stored.py), so the
        message after it keeps its vector. An edit of a message not stored yet waits for its add, which then stores
        the edited text.
        """
        if self._tombstones.holds_message(message_id):
            log.debug("Edit of deleted message %d dropped", message_id)
            return False
        # Noted before waiting: an add that arrives while this waits stores the edited text.
        self._pending_edits.note(message_id, content, edited_at)
        await self._after_queued()
        async with self.write_lock:
            current = await self._store.message(message_id)
            if current is None:
                log.debug("Edit of message %d came before the message; kept for its add", message_id)
                return False
            self._pending_edits.discard([message_id])
            new_content = edited_content(content, current.content)
            if new_content == current.content:
                return True
            ref = RowRef(current.rowid, current.message_id, current.guild_id, current.channel_id, current.created_at)
            if not new_content:  # edited down to nothing: nothing left to remember
                await self._delete_refs([ref])
                return True
            edited = ChannelMessage(current.rowid, message_id, current.guild_id, current.channel_id,
                                    current.author_name, new_content, current.created_at)
            batch = WriteBatch(self._embedder.model_name, guild_ids={current.guild_id}, replace_all_models=True)
            batch.edits = [EditRow(current.rowid, new_content, text.fts_document(new_content), current.author_name,
                                   to_timestamp(edited_at) if edited_at else None)]
            await self._write(batch, await self._reembed(batch, edited), {})
            return True

    async def delete(self, message_ids: Sequence[int]) -> int:
        """Forget messages; each id also leaves a tombstone, so an add of it that comes later is not stored. The
        messages left are not embedded again: no vector quotes another message (vectors/stored.py)."""
        message_ids = list(message_ids)
        # Buried before waiting: an add that arrives while this waits is dropped; one queued before is
        # stored, then deleted below.
        self._tombstones.bury_messages(message_ids)
        self._pending_edits.discard(message_ids)
        await self._after_queued()
        async with self.write_lock:
            refs = await self._store.refs_for_message_ids(message_ids)
            count = await self._delete_refs(refs, tombstones=message_ids)
            if time.time() >= self._next_prune:
                await self._prune_tombstones()
            return count

    async def prune_tombstones(self) -> int:
        """Forget tombstones older than ``TOMBSTONE_DAYS``; returns how many went."""
        async with self.write_lock:
            return await self._prune_tombstones()

    async def prune_tombstones_if_free(self) -> None:
        """``prune_tombstones`` as memory opens, if the database lets it now (a start must not need to write): nothing
        is lost otherwise, a later delete prunes them, and what stopped it stops the writes too, which say so."""
        try:
            await self.prune_tombstones()
        except sqlite3.OperationalError as exc:  # another process holds the write lock, or the disk is full
            log.debug("Could not prune old tombstones now (%s); a later delete does", exc)

    async def _prune_tombstones(self) -> int:
        self._next_prune = time.time() + _PRUNE_EVERY_S
        pruned = await self._store.prune_tombstones(time.time() - TOMBSTONE_DAYS * 86_400)
        if pruned:
            log.info("Pruned %d message tombstones older than %d days", pruned, TOMBSTONE_DAYS)
        return pruned

    async def delete_channel(self, guild_id: int, channel_id: int) -> int:
        """Forget a channel and its threads.

        Messages created before now that arrive later in the channel or its threads are dropped too, and each
        forgotten id leaves a tombstone: reading the channel's history again (catch-up, backfill) does not bring
        them back.
        """
        self._tombstones.bury_channel(guild_id, channel_id)
        await self._after_queued()
        async with self.write_lock:
            refs = await self._store.refs_for_channel(guild_id, channel_id)
            return await self._delete_refs(refs, tombstones=[ref.message_id for ref in refs])

    async def delete_guild(self, guild_id: int) -> int:
        """Forget a guild; its messages created before now that arrive later are dropped too."""
        self._tombstones.bury_guild(guild_id)
        await self._after_queued()
        async with self.write_lock:
            count = await self._delete_refs(await self._store.refs_for_guild(guild_id))
            await self._indexes.drop(guild_id)
            return count

    async def delete_author(self, guild_id: int | None, author_id: int, channel_id: int | None = None) -> int:
        """Forget every message of a user (in one guild, or everywhere with ``guild_id=None``; or one channel).

        Without a channel, their messages created before now that arrive later are dropped too; newer ones (after
        an opt-in, a rejoin) are stored as usual. Each forgotten id leaves a tombstone, so reading the history again
        (catch-up, backfill) does not bring it back.
        """
        if channel_id is None:
            self._tombstones.bury_author(guild_id, author_id)
        await self._after_queued()
        async with self.write_lock:
            refs = await self._store.refs_for_author(guild_id, author_id)
            if channel_id is not None:
                refs = [ref for ref in refs if ref.channel_id == channel_id]
            return await self._delete_refs(refs, tombstones=[ref.message_id for ref in refs])

    async def erase(self, select: Callable[[], Awaitable[list[RowRef]]]) -> int:
        """Forget exactly the stored messages ``select`` names (read under the write lock), each leaving a tombstone:
        the erasure ledger's re-apply, which must not bury whole channels or authors as of now."""
        await self._after_queued()
        async with self.write_lock:
            refs = await select()
            return await self._delete_refs(refs, tombstones=[ref.message_id for ref in refs])

    async def delete_older_than(self, guild_id: int, cutoff: datetime) -> int:
        """Forget a guild's messages written before ``cutoff`` (retention), in one DELETE."""
        await self._after_queued()
        async with self.write_lock:
            older_than = (guild_id, to_timestamp(cutoff))
            refs = await self._store.refs_older_than(*older_than)
            return await self._delete_refs(refs, older_than=older_than)

    async def _delete_refs(self, refs: list[RowRef], tombstones: Sequence[int] = (),
                           older_than: tuple[int, float] | None = None) -> int:
        """Delete ``refs`` (or, for retention, everything ``older_than``) and record ``tombstones`` (message ids) in
        the same transaction. Nothing is embedded: each vector is its message alone, so a deleted message's text
        goes with its own vector, and the messages after it keep theirs."""
        if not refs and not tombstones:
            return 0
        batch = WriteBatch(self._embedder.model_name, deletes=[] if older_than else [ref.rowid for ref in refs],
                           older_than=older_than, guild_ids={ref.guild_id for ref in refs}, replace_all_models=True,
                           tombstones=list(tombstones), deleted_at=time.time())
        removed: dict[int, list[int]] = {}
        for ref in refs:
            removed.setdefault(ref.guild_id, []).append(ref.rowid)
        await self._write(batch, {}, removed)
        if refs:
            log.info("Forgot %d messages in %d guild(s)", len(refs), len(removed))
        return len(refs)

    async def _reembed(self, batch: WriteBatch, message: ChannelMessage) -> dict[int, int]:
        """Embed an edited message again into ``batch``, alone (``previous`` None: the core's vector reads no other
        message); returns rowid → guild.

        If the model fails, the change is written all the same: the message's old vectors go (they describe text
        that no longer applies) and it waits for a new one, as a new message would.
        """
        guilds = {message.rowid: message.guild_id}
        try:
            [vector] = await stored_vectors(self._embedder,
                                            [VectorSource(message.author_name, message.content, None)])
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - any model failure: the vector comes later
            log.warning("Embedding edited message %d failed (%s: %s); it waits for a new vector",
                        message.message_id, type(error).__name__, error)
            batch.dropped_vectors = batch.pending = [message.rowid]
            batch.guild_ids.add(message.guild_id)
            return guilds
        batch.vectors = [(message.rowid, vector)]
        batch.resolved = [message.rowid]
        return guilds

    async def _write(self, batch: WriteBatch, guilds: dict[int, int], removed: dict[int, list[int]]) -> None:
        """Write ``batch``, then bring FAISS in line: ``removed`` rows (by guild) and dropped vectors go, new
        vectors come in (``guilds``: rowid → guild of the edited message embedded again)."""
        self._filler.changed()
        # An index that loads on demand (a light command's) loads while it still matches the store: checked, not
        # rebuilt.
        for guild_id in {*removed, *(guilds[rowid] for rowid in batch.dropped_vectors)}:
            await self._indexes.loaded(guild_id)
        await self._store.write(batch)
        if batch.pending:
            self._filler.marked(len(batch.pending))
        for rowid in batch.dropped_vectors:
            removed.setdefault(guilds[rowid], []).append(rowid)
        for guild_id, rowids in removed.items():
            await self._indexes.remove(guild_id, np.asarray(rowids, dtype=np.int64))
        replaced: dict[int, list[tuple[int, np.ndarray]]] = {}
        for rowid, vector in batch.vectors:
            replaced.setdefault(guilds[rowid], []).append((rowid, vector))
        for guild_id, pairs in replaced.items():
            ids = np.asarray([rowid for rowid, _ in pairs], dtype=np.int64)
            await self._indexes.add(guild_id, ids, np.stack([vector for _, vector in pairs]))
