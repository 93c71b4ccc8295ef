"""VectorFiller: gives each stored message its vector, in the background. It reads what needs one from the store,
embeds each message (vectors.stored_vectors: the message alone), and writes the vectors to the store and
the vector index. A failing model is tried again after growing pauses; a message the model cannot embed is set aside
alone and stays keyword-searchable."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import numpy as np

from ..vectors.embedding import Embedder
from .report import RetryPolicy, describe
from ..store.rows import VectorInput, WriteBatch
from ..store.protocol import DatabaseUnavailableError, PendingVectors, VectorIndexes
from ..vectors.stored import stored_vectors

__all__ = ("PROBE_TEXT", "SLICE", "VectorFiller")

log = logging.getLogger(__name__)

# Messages read and embedded at a time. The model sorts each slice by length: on chat text a 1,024-message window
# pads ~2% more than sorting everything, a 64-message one ~2x.
SLICE = 1024
# Embedded slices waiting for the writer: enough that storage overlaps the next slice's embedding.
_HANDOFF_DEPTH = 2
# After a failed batch, this text tells a failing model (it fails too) from messages the model cannot take.
PROBE_TEXT = "ok"


class _ModelDown(Exception):
    """The model failed on ``PROBE_TEXT`` too: nothing is wrong with the messages; all of them wait."""


@dataclass(frozen=True, slots=True)
class _Result:
    item: VectorInput
    vector: np.ndarray | None
    error: str | None  # why the model could not embed this message (vector is None)


@dataclass(frozen=True, slots=True)
class _Embedded:
    guild_id: int
    results: list[_Result]
    embedder: Embedder
    changes: int  # the change count when the inputs were read


@dataclass(frozen=True, slots=True)
class _PassDone:
    marks: int  # the mark count when the pass began


class VectorFiller:
    """Two tasks: one reads waiting messages and embeds them, one writes their vectors under ``write_lock``.

    Anyone who marks messages as needing a vector calls ``marked``; anyone who changes messages (their text, their
    order, their existence) calls ``changed``, so a vector computed from the old text is not written.
    """

    def __init__(self, store: PendingVectors, write_lock: asyncio.Lock, embedder: Embedder, indexes: VectorIndexes,
                 retry: RetryPolicy) -> None:
        self._store = store
        self._write_lock = write_lock
        self._embedder = embedder
        self._indexes = indexes
        self._retry = retry
        self._handoff: asyncio.Queue[_Embedded | _PassDone] = asyncio.Queue(_HANDOFF_DEPTH)
        self._wake = asyncio.Event()
        self._progress = asyncio.Condition()
        self._in_flight: set[int] = set()
        self._marks = 0
        self._clean = -1  # the mark count a whole pass found nothing left for
        self._changes = 0
        self._recheck = False  # after a failed write: check every input again
        self._write_failed = False
        self._failures = 0
        self._store_logs = False  # the failure is a lost server: the store logs that outage (postgres/faults.py)
        self._resume_at = 0.0  # after a failure, no pass starts before this (event-loop time)
        self.failing = False
        self.failure: str | None = None  # why vectors are late, while they are
        self.backlog = 0  # messages waiting for a vector, as last counted plus marked since
        self._rejected: list[int] = []

    def marked(self, count: int = 0) -> None:
        """Messages were marked as needing a vector (``count`` new ones)."""
        self._marks += 1
        self.backlog += count
        self._wake.set()

    def changed(self) -> None:
        """Messages were edited, deleted or stored out of order: inputs read before may be stale."""
        self._changes += 1

    def use(self, embedder: Embedder, indexes: VectorIndexes) -> None:
        """Switch model and indexes (with ``write_lock`` held); what the old model had in flight is embedded again."""
        self._embedder, self._indexes = embedder, indexes
        self.changed()
        self.marked()

    def take_rejected(self) -> list[int]:
        """Ids of the messages the model could not embed since the last call."""
        rejected, self._rejected = self._rejected, []
        return rejected

    async def settle(self) -> None:
        """Return once everything marked before this call has its vector, or as soon as the model is failing."""
        marks = self._marks
        async with self._progress:
            await self._progress.wait_for(lambda: self._clean >= marks or self.failing)

    # -- reading and embedding ------------------------------------------------------------------------------

    async def run_embedding(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            pause = self._resume_at - loop.time()
            if pause > 0:
                await asyncio.sleep(pause)
            self._wake.clear()
            marks = self._marks
            if await self._one_pass():
                await self._handoff.put(_PassDone(marks))
            else:
                self._wake.set()  # the next pass waits out the pause first

    async def _one_pass(self) -> bool:
        """Embed every message waiting, guild by guild and slice by slice; False when something failed (what is
        left waits for the next pass)."""
        try:
            async with self._write_lock:  # the writers share one connection: read between their transactions
                guilds = await self._store.pending_guilds()
            for guild_id in guilds:
                await self._embed_guild(guild_id)
        except asyncio.CancelledError:
            raise
        except _ModelDown as error:
            await self._failed(f"the embedding model fails ({error})")
            return False
        except Exception as error:  # noqa: BLE001 - reading the database failed; the pass is tried again later
            await self._failed(f"reading the messages to embed failed ({describe(error)})", error)
            return False
        return True

    async def _embed_guild(self, guild_id: int) -> None:
        after = 0
        while True:
            changes, embedder = self._changes, self._embedder
            async with self._write_lock:
                page = await self._store.pending_page(guild_id, after, SLICE)
            if not page:
                return
            after = page[-1].rowid
            todo = [item for item in page if item.rowid not in self._in_flight]
            if not todo:
                continue
            results = await self._embed(embedder, todo, failed_alone=False)
            self._recovered()
            self._in_flight.update(item.rowid for item in todo)
            await self._handoff.put(_Embedded(guild_id, results, embedder, changes))

    async def _embed(self, embedder: Embedder, items: list[VectorInput], failed_alone: bool) -> list[_Result]:
        """Vectors for ``items``; after a failure, halves are tried alone down to the message that fails alone twice,
        which is rejected. Raises ``_ModelDown`` when the model fails on any text."""
        try:
            vectors = await stored_vectors(embedder, [item.source for item in items])
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - any model failure is told apart by the probe below
            await self._probe(embedder)
            if len(items) == 1:
                if failed_alone:
                    return [_Result(items[0], None, describe(error))]
                return await self._embed(embedder, items, failed_alone=True)
            half = len(items) // 2
            first = await self._embed(embedder, items[:half], False)
            return first + await self._embed(embedder, items[half:], False)
        return [_Result(item, vector, None) if np.isfinite(vector).all()
                else _Result(item, None, "the model gave a vector that is not finite")
                for item, vector in zip(items, vectors, strict=True)]

    async def _probe(self, embedder: Embedder) -> None:
        try:
            await embedder.embed([PROBE_TEXT])
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - whatever it is, the model does not work now
            raise _ModelDown(describe(error)) from error

    async def _failed(self, reason: str, error: BaseException | None = None) -> None:
        self._failures += 1
        delay = self._retry.delay(self._failures)
        self._resume_at = asyncio.get_running_loop().time() + delay
        if not self.failing:
            self._store_logs = isinstance(error, DatabaseUnavailableError)
            log.log(logging.DEBUG if self._store_logs else logging.WARNING, "Vectors are late: %s. Stored messages "
                    "stay keyword-searchable and wait for their vectors (tried again in %.1f s, and after a restart)",
                    reason, delay)
        else:
            log.debug("Vectors still late: %s; tried again in %.1f s", reason, delay)
        async with self._progress:
            self.failing, self.failure = True, reason
            self._progress.notify_all()

    def _recovered(self) -> None:
        if self.failing:
            # Whatever was failing (the model, or the database it reads from), a slice was read and embedded.
            log.log(logging.DEBUG if self._store_logs else logging.INFO,
                    "Vectors are computed again; the messages waiting for theirs are embedded")
        self.failing, self.failure, self._failures = False, None, 0

    # -- writing --------------------------------------------------------------------------------------------

    async def run_writing(self) -> None:
        while True:
            item = await self._handoff.get()
            if isinstance(item, _PassDone):
                await self._pass_done(item.marks)
                continue
            try:
                async with self._write_lock:
                    await self._write(item)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - the messages keep waiting in the store; tried again
                self._write_failed = self._recheck = True
                log.debug("Storing %d vectors failed", len(item.results), exc_info=True)
                await self._failed(f"storing vectors failed ({describe(error)})", error)
            finally:
                self._in_flight.difference_update(result.item.rowid for result in item.results)

    async def _pass_done(self, marks: int) -> None:
        if self._write_failed:  # some of the pass is still waiting: another pass, after the pause
            self._write_failed = False
            self._wake.set()
            return
        try:
            self.backlog = (await self._store.pending_count())[0]
        except Exception:  # noqa: BLE001 - only a figure for /memory stats
            log.debug("Counting the messages waiting for vectors failed", exc_info=True)
        async with self._progress:
            self._clean = max(self._clean, marks)
            self._progress.notify_all()

    async def _write(self, embedded: _Embedded) -> None:
        if embedded.embedder is not self._embedder:
            return  # the model was switched meanwhile: the new one embeds these again
        results = embedded.results
        if embedded.changes != self._changes or self._recheck:
            # A message edited, deleted or given a new predecessor since it was read keeps waiting.
            current = await self._store.pending_listed(embedded.guild_id, [result.item.rowid for result in results])
            results = [result for result in results if current.get(result.item.rowid) == result.item.source]
        if not results:
            self._recheck = False
            return
        done = [(result.item.rowid, result.vector) for result in results if result.vector is not None]
        rejected = [result for result in results if result.vector is None]
        batch = WriteBatch(self._embedder.model_name, replace_all_models=True, vectors=done,
                           resolved=[rowid for rowid, _ in done],
                           rejected=[(result.item.rowid, result.error or "") for result in rejected],
                           guild_ids={embedded.guild_id} if done else set())
        await self._store.write(batch)
        self._recheck = False
        self.backlog = max(0, self.backlog - len(results))
        for result in rejected:
            log.warning("Message %d was not embedded (%s); it stays keyword-searchable and is not tried again",
                        result.item.message_id, result.error)
            self._rejected.append(result.item.message_id)
        if done:
            ids = np.asarray([rowid for rowid, _ in done], dtype=np.int64)
            await self._indexes.add(embedded.guild_id, ids, np.stack([vector for _, vector in done]))
