"""IngestQueue: batches incoming messages, embeds them, and keeps SQLite, FTS5 and FAISS in step on every change."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from . import text
from .embedding import Embedder
from .records import MessageRecord
from .store import ChannelMessage, EditRow, MemoryStore, NewRow, RowRef, WriteBatch, to_timestamp
from .tombstones import TOMBSTONE_DAYS, PendingEdits, Tombstones
from .vector_index import IndexRegistry

__all__ = ("ATTACHMENT_PREFIX", "IngestQueue", "edited_content", "stored_content")

log = logging.getLogger(__name__)

# Marks an attachment/embed stand-in line in stored content, so an edit of the text keeps the stand-ins.
ATTACHMENT_PREFIX = "📎 "
# Discord allows 4,000 characters; imports may carry more. Anything past this is not worth a vector.
MAX_CONTENT_CHARS = 6_000
_BATCH_WAIT_S = 0.05
# Under a backlog (an import, a burst after a restart) batches grow to this: the model sorts each batch by
# length, and on chat text a 1,024-message window pads ~2% more than sorting everything, a 64-message one ~2x.
BACKLOG_BATCH_SIZE = 1024
# Embedded batches waiting for the writer: enough that storage overlaps the next batch's embedding.
_HANDOFF_DEPTH = 2
# Unicode category Cc (C0, DEL, C1) except tab and newline; "\r\n" becomes "\n" first.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Old tombstones are pruned on open and then at most this often, by a delete.
_PRUNE_EVERY_S = 3600.0


def clean_text(value: str) -> str:
    """Text SQLite and the tokenizer accept: lone surrogates become U+FFFD, NUL/control characters go."""
    value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _CONTROLS.sub("", value.replace("\r\n", "\n"))


def stored_content(content: str, attachments: Iterable[str] = ()) -> str:
    """The text memory stores and indexes for a message; empty when there is nothing to remember."""
    body = clean_text(content).strip()[:MAX_CONTENT_CHARS]
    stand_ins = [clean_text(item).strip() for item in attachments]
    lines = [body] if body else []
    lines += [ATTACHMENT_PREFIX + " ".join(item.split())[:200] for item in stand_ins if item]
    return "\n".join(lines)


def _stand_ins(content: str) -> list[str]:
    return [line[len(ATTACHMENT_PREFIX):] for line in content.split("\n") if line.startswith(ATTACHMENT_PREFIX)]


def edited_content(content: str, current: str) -> str:
    """The text stored after an edit to ``content`` of a message stored as ``current``: an edit changes the words,
    the attachment stand-ins stay."""
    return stored_content(content, _stand_ins(current))


@dataclass(slots=True)
class _Prepared:
    """A message on its way through the pipeline, with the predecessor its vector was computed with."""

    record: MessageRecord
    content: str
    created_at: float
    previous: tuple[str, str] | None

    @property
    def channel(self) -> tuple[int, int]:
        return self.record.guild_id, self.record.channel_id

    @property
    def order(self) -> tuple[float, int]:
        return self.created_at, self.record.message_id

    def embedding_input(self) -> str:
        return text.embedding_input(self.record.author_name, self.content, self.previous)


def _order(message: ChannelMessage) -> tuple[float, int]:
    return message.created_at, message.message_id


def _as_previous(message: ChannelMessage | _Prepared | None) -> tuple[str, str] | None:
    if message is None:
        return None
    if isinstance(message, _Prepared):
        return message.record.author_name, message.content
    return message.author_name, message.content


class IngestQueue:
    """A bounded queue in front of a two-stage pipeline: (collect, embed) → (write SQLite, FAISS).

    The writer stage is the single owner of writes; edits and deletes first wait for every add queued before
    them, then run under the writer's lock, so a queued add is never lost, reordered or resurrected. A delete that
    comes before its add (still loading, in flight, or never seen) leaves a tombstone, and the add is dropped; an
    edit that comes before its add is kept, and the add stores the edited text.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, indexes: IndexRegistry, *,
                 batch_size: int = 64, queue_size: int = 1024) -> None:
        self._store = store
        self._embedder = embedder
        self._indexes = indexes
        self.batch_size = batch_size
        self._queue: asyncio.Queue[tuple[int, MessageRecord]] = asyncio.Queue(queue_size)
        self._handoff: asyncio.Queue[tuple[int, list[_Prepared], np.ndarray, Embedder]] = asyncio.Queue(
            _HANDOFF_DEPTH)
        self.write_lock = asyncio.Lock()
        self._enqueued = 0
        self._done = 0
        self._progress = asyncio.Condition()
        # Last stored message per channel: the writer's is authoritative, the embedder's is a guess it checks.
        self._tails: dict[tuple[int, int], ChannelMessage | _Prepared | None] = {}
        self._guesses: dict[tuple[int, int], ChannelMessage | _Prepared | None] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._tombstones = Tombstones()
        self._pending_edits = PendingEdits()
        self._next_prune = 0.0

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._embed_loop(), name="memory-ingest-embed"),
                       asyncio.create_task(self._write_loop(), name="memory-ingest-write")]

    @property
    def queued(self) -> int:
        return self._queue.qsize()

    def use(self, embedder: Embedder, indexes: IndexRegistry, batch_size: int) -> None:
        """Switch model and indexes; call with ``write_lock`` held (batches embedded before are re-embedded)."""
        self._embedder, self._indexes, self.batch_size = embedder, indexes, batch_size

    async def add(self, record: MessageRecord) -> None:
        """Queue a message; waits while the queue is full (backpressure). A deleted message is dropped here."""
        if self._tombstones.covers(record):
            log.debug("Message %d was deleted before it was stored; dropped", record.message_id)
            return
        record = self._pending_edits.apply(record)
        self._enqueued += 1
        await self._queue.put((self._enqueued, record))

    async def flush(self) -> None:
        """Return once every message queued before this call is written (or skipped)."""
        target = self._enqueued
        async with self._progress:
            await self._progress.wait_for(lambda: self._done >= target)

    async def close(self) -> None:
        await self.flush()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    # -- stage 1: collect and embed -------------------------------------------------------------------------

    async def _next_batch(self) -> tuple[int, list[MessageRecord]]:
        """The next batch: up to ``batch_size`` within ``_BATCH_WAIT_S``, or a wide one under a backlog."""
        seq, record = await self._queue.get()
        records = [record]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _BATCH_WAIT_S
        backlog = self._queue.qsize() >= self.batch_size
        limit = max(self.batch_size, BACKLOG_BATCH_SIZE) if backlog else self.batch_size
        while len(records) < limit:
            if self._queue.empty():
                timeout = deadline - loop.time()
                if len(records) >= self.batch_size or timeout <= 0:
                    break
                try:
                    seq, record = await asyncio.wait_for(self._queue.get(), timeout)
                except TimeoutError:
                    break
            else:
                seq, record = self._queue.get_nowait()
            records.append(record)
        return seq, records

    async def _embed_loop(self) -> None:
        while True:
            seq, records = await self._next_batch()
            embedder = self._embedder
            try:
                prepared = await self._prepare(records)
                vectors = await embedder.embed([item.embedding_input() for item in prepared])
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Embedding a batch of %d messages failed; they are not stored", len(records))
                prepared, vectors = [], np.zeros((0, 0), dtype=np.float32)
            await self._handoff.put((seq, prepared, vectors, embedder))

    async def _prepare(self, records: list[MessageRecord]) -> list[_Prepared]:
        by_id: dict[int, _Prepared] = {}
        for record in records:
            content = stored_content(record.content, record.attachments)
            if not content:
                log.debug("Message %d has no text or attachments; not stored", record.message_id)
                continue
            by_id[record.message_id] = _Prepared(record, content, to_timestamp(record.created_at), None)
        prepared = sorted(by_id.values(), key=lambda item: (item.channel, item.order))
        await self._link_previous(prepared, self._guesses)
        return prepared

    async def _link_previous(self, prepared: list[_Prepared], tails: dict) -> None:
        """Set each message's predecessor: the later of the one before it in the batch and the stored one."""
        for position, item in enumerate(prepared):
            before = prepared[position - 1] if position else None
            if before is not None and before.channel != item.channel:
                before = None
            stored = await self._stored_previous(item, tails)
            if before is None or (stored is not None and _tail_order(stored) > before.order):
                item.previous = _as_previous(stored)
            else:
                item.previous = _as_previous(before)
        for item in prepared:
            tail = tails.get(item.channel)
            if tail is None or _tail_order(tail) < item.order:
                tails[item.channel] = item

    async def _stored_previous(self, item: _Prepared, tails: dict) -> ChannelMessage | _Prepared | None:
        guild_id, channel_id = item.channel
        if item.channel not in tails:
            tails[item.channel] = await self._store.previous_in_channel(guild_id, channel_id, float("inf"), 0)
        tail = tails[item.channel]
        if tail is None or _tail_order(tail) < item.order:
            return tail
        # Arrived out of order: its predecessor is somewhere in the stored history.
        return await self._store.previous_in_channel(guild_id, channel_id, *item.order)

    # -- stage 2: write -------------------------------------------------------------------------------------

    async def _write_loop(self) -> None:
        while True:
            seq, prepared, vectors, embedder = await self._handoff.get()
            try:
                async with self.write_lock:
                    await self._write(prepared, vectors, embedder)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("Storing a batch of %d messages failed", len(prepared))
                self._tails.clear()
                self._guesses.clear()
            async with self._progress:
                self._done = seq
                self._progress.notify_all()

    async def _write(self, prepared: list[_Prepared], vectors: np.ndarray, embedder: Embedder) -> None:
        if not prepared:
            return
        keep = await self._storable(prepared)
        prepared, vectors = [prepared[i] for i in keep], vectors[keep]
        guessed = [item.previous for item in prepared]
        await self._link_previous(prepared, self._tails)
        # The embedder guessed from messages not yet written; an edit or delete since then changes the truth.
        stale = [i for i, item in enumerate(prepared)
                 if item.previous != guessed[i] or embedder is not self._embedder]
        if stale:
            vectors = vectors.copy()
            vectors[stale] = await self._embedder.embed([prepared[i].embedding_input() for i in stale])
        rowids = self._store.allocate_rowids(len(prepared))
        batch = WriteBatch(self._embedder.model_name)
        batch.inserts = [NewRow(rowid, item.record, item.content, text.fts_document(item.content), vector)
                         for rowid, item, vector in zip(rowids, prepared, vectors, strict=True)]
        batch.guild_ids = {item.record.guild_id for item in prepared}
        await self._store.write(batch)
        ids = np.asarray(rowids, dtype=np.int64)
        for guild_id in batch.guild_ids:
            mask = np.array([item.record.guild_id == guild_id for item in prepared])
            await self._indexes.add(guild_id, ids[mask], vectors[mask])

    async def _storable(self, prepared: list[_Prepared]) -> list[int]:
        """Positions of the messages neither stored yet nor deleted.

        SQLite's tombstones catch deletes this process no longer holds in memory (before a restart, a
        re-imported export) or never saw (another process). A delete that comes while these are queued
        waits for them instead, and counts them; one that came before them dropped them in ``add``.
        """
        stored, deleted = await self._store.known_message_ids([item.record.message_id for item in prepared])
        keep: list[int] = []
        for position, item in enumerate(prepared):
            message_id = item.record.message_id
            if message_id in deleted:
                log.debug("Message %d was deleted before it was stored; dropped", message_id)
            elif message_id not in stored:
                keep.append(position)
        return keep

    # -- edits and deletes ----------------------------------------------------------------------------------

    async def edit(self, message_id: int, content: str, edited_at: datetime | None) -> bool:
        """Re-store and re-embed an edited message (and its successor); False if it is not stored.

        An edit of a message not stored yet waits for its add, which then stores the edited text.
        """
        if self._tombstones.holds_message(message_id):
            log.debug("Edit of deleted message %d dropped", message_id)
            return False
        # Noted before the flush: an add that arrives while this waits stores the edited text.
        self._pending_edits.note(message_id, content, edited_at)
        await self.flush()
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
                await self._delete_refs([ref], relink=True)
                return True
            edited = ChannelMessage(current.rowid, message_id, current.guild_id, current.channel_id,
                                    current.author_name, new_content, current.created_at)
            batch = WriteBatch(self._embedder.model_name, guild_ids={current.guild_id}, replace_all_models=True)
            batch.edits = [EditRow(current.rowid, new_content, text.fts_document(new_content), current.author_name,
                                   to_timestamp(edited_at) if edited_at else None)]
            previous = await self._store.previous_in_channel(current.guild_id, current.channel_id,
                                                             current.created_at, message_id)
            successor = await self._store.next_in_channel(current.guild_id, current.channel_id,
                                                          current.created_at, message_id)
            relinked = [(edited, previous)] + ([(successor, edited)] if successor else [])
            guilds = await self._reembed(batch, relinked)
            await self._store.write(batch)
            await self._apply_to_indexes(batch, guilds, {})
            self._forget_tails([ref])
            return True

    async def delete(self, message_ids: Sequence[int]) -> int:
        """Forget messages; each id also leaves a tombstone, so an add of it that comes later is not stored."""
        message_ids = list(message_ids)
        # Buried before the flush: an add that arrives while this waits is dropped; one queued before is
        # written, then deleted below.
        self._tombstones.bury_messages(message_ids)
        self._pending_edits.discard(message_ids)
        await self.flush()
        async with self.write_lock:
            refs = await self._store.refs_for_message_ids(message_ids)
            count = await self._delete_refs(refs, relink=True, tombstones=message_ids)
            if time.time() >= self._next_prune:
                await self._prune_tombstones()
            return count

    async def prune_tombstones(self) -> int:
        """Forget tombstones older than ``TOMBSTONE_DAYS``; returns how many went."""
        async with self.write_lock:
            return await self._prune_tombstones()

    async def _prune_tombstones(self) -> int:
        self._next_prune = time.time() + _PRUNE_EVERY_S
        pruned = await self._store.prune_tombstones(time.time() - TOMBSTONE_DAYS * 86_400)
        if pruned:
            log.info("Pruned %d message tombstones older than %d days", pruned, TOMBSTONE_DAYS)
        return pruned

    async def delete_channel(self, guild_id: int, channel_id: int) -> int:
        """Forget a channel and its threads; nothing outside them had them as a predecessor.

        Messages created before now that arrive later in the channel or its threads are dropped too, and each
        forgotten id leaves a tombstone: reading the channel's history again (catch-up, backfill) does not bring
        them back.
        """
        self._tombstones.bury_channel(guild_id, channel_id)
        await self.flush()
        async with self.write_lock:
            refs = await self._store.refs_for_channel(guild_id, channel_id)
            return await self._delete_refs(refs, relink=False, tombstones=[ref.message_id for ref in refs])

    async def delete_guild(self, guild_id: int) -> int:
        """Forget a guild; its messages created before now that arrive later are dropped too."""
        self._tombstones.bury_guild(guild_id)
        await self.flush()
        async with self.write_lock:
            count = await self._delete_refs(await self._store.refs_for_guild(guild_id), relink=False)
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
        await self.flush()
        async with self.write_lock:
            refs = await self._store.refs_for_author(guild_id, author_id)
            if channel_id is not None:
                refs = [ref for ref in refs if ref.channel_id == channel_id]
            return await self._delete_refs(refs, relink=True, tombstones=[ref.message_id for ref in refs])

    async def delete_older_than(self, guild_id: int, cutoff: datetime) -> int:
        """Forget a guild's messages written before ``cutoff`` (retention), in one DELETE."""
        await self.flush()
        async with self.write_lock:
            older_than = (guild_id, to_timestamp(cutoff))
            refs = await self._store.refs_older_than(*older_than)
            return await self._delete_refs(refs, relink=True, older_than=older_than)

    async def _delete_refs(self, refs: list[RowRef], relink: bool, tombstones: Sequence[int] = (),
                           older_than: tuple[int, float] | None = None) -> int:
        """Delete ``refs`` (or, for retention, everything ``older_than``) and record ``tombstones`` (message ids) in
        the same transaction."""
        if not refs and not tombstones:
            return 0
        batch = WriteBatch(self._embedder.model_name, deletes=[] if older_than else [ref.rowid for ref in refs],
                           older_than=older_than, guild_ids={ref.guild_id for ref in refs}, replace_all_models=True,
                           tombstones=list(tombstones), deleted_at=time.time())
        guilds = await self._reembed(batch, await self._successors(refs, older_than)) if relink else {}
        await self._store.write(batch)
        if not refs:
            return 0
        removed: dict[int, list[int]] = {}
        for ref in refs:
            removed.setdefault(ref.guild_id, []).append(ref.rowid)
        await self._apply_to_indexes(batch, guilds, removed)
        self._forget_tails(refs)
        log.info("Forgot %d messages in %d guild(s)", len(refs), len(removed))
        return len(refs)

    async def _successors(self, refs: list[RowRef], older_than: tuple[int, float] | None = None
                          ) -> list[tuple[ChannelMessage, ChannelMessage | None]]:
        """Messages that follow a deleted one and survive, each with its new predecessor."""
        if older_than is not None:  # everything before the cutoff goes: each channel's first survivor has none
            guild_id, cutoff = older_than
            firsts = [await self._store.next_in_channel(guild_id, channel_id, cutoff, -1)
                      for channel_id in sorted({ref.channel_id for ref in refs})]
            return [(message, None) for message in firsts if message is not None]
        deleted = {ref.rowid for ref in refs}
        found: dict[int, tuple[ChannelMessage, ChannelMessage | None]] = {}
        for ref in refs:
            at: tuple[float, int] = (ref.created_at, ref.message_id)
            successor = await self._store.next_in_channel(ref.guild_id, ref.channel_id, *at)
            while successor is not None and successor.rowid in deleted:
                successor = await self._store.next_in_channel(ref.guild_id, ref.channel_id, *_order(successor))
            if successor is None or successor.rowid in found:
                continue
            previous = await self._store.previous_in_channel(ref.guild_id, ref.channel_id, *at)
            while previous is not None and previous.rowid in deleted:
                previous = await self._store.previous_in_channel(ref.guild_id, ref.channel_id, *_order(previous))
            found[successor.rowid] = (successor, previous)
        return list(found.values())

    async def _reembed(
        self, batch: WriteBatch, pairs: list[tuple[ChannelMessage, ChannelMessage | None]]
    ) -> dict[int, int]:
        """Embed each message again with its (new) predecessor into ``batch.vectors``; returns rowid → guild."""
        if not pairs:
            return {}
        inputs = [text.embedding_input(message.author_name, message.content, _as_previous(previous))
                  for message, previous in pairs]
        vectors = await self._embedder.embed(inputs)
        batch.vectors = [(message.rowid, vector) for (message, _), vector in zip(pairs, vectors, strict=True)]
        return {message.rowid: message.guild_id for message, _ in pairs}

    async def _apply_to_indexes(
        self, batch: WriteBatch, guilds: dict[int, int], removed: dict[int, list[int]]
    ) -> None:
        for guild_id, rowids in removed.items():
            await self._indexes.remove(guild_id, np.asarray(rowids, dtype=np.int64))
        replaced: dict[int, list[tuple[int, np.ndarray]]] = {}
        for rowid, vector in batch.vectors:
            replaced.setdefault(guilds[rowid], []).append((rowid, vector))
        for guild_id, pairs in replaced.items():
            ids = np.asarray([rowid for rowid, _ in pairs], dtype=np.int64)
            await self._indexes.add(guild_id, ids, np.stack([vector for _, vector in pairs]))

    def _forget_tails(self, refs: Iterable[RowRef]) -> None:
        for ref in refs:
            self._tails.pop((ref.guild_id, ref.channel_id), None)
            self._guesses.pop((ref.guild_id, ref.channel_id), None)


def _tail_order(tail: ChannelMessage | _Prepared) -> tuple[float, int]:
    return tail.order if isinstance(tail, _Prepared) else _order(tail)
