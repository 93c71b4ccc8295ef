"""Memory: the one object the cog and the CLI use — storage, embedding, indexes, ingest, search and recall."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .privacy import ledger
from .privacy.admission import Admission
from .privacy.ledger import LEDGER_NAME, Erasure, ErasureLedger
from .privacy.purge_schedule import PurgeScheduler
from .store.backend import open_backend
from .vectors.embedding import EmbeddingModelError, EmbeddingService
from .store.history import Exclusion
from .ingest.names import PlaceNames
from .ingest.queue import FlushReport, IngestQueue
from .runtime.config import PROFILE_CHOICE_PATH
from .runtime.private_files import tighten_memory_files
from .runtime.profile import MemoryProfile, ProfileError, reranks, resolve_device
from .records import Candidate, MessageRecord, SearchFilters, checked_limit
from .search.second_stage import reranked
from .ingest.reembed import reembed_all
from .settings import GuildPolicy, GuildSettings
from .ingest.spool import SPOOL_NAME, IngestSpool
from .store.protocol import (DatabaseUnavailableError, SearchEngine, Store, StoreBackend, StoreOpenError,
                             VectorIndexes)
from .vectors.files import disk_nearly_full
from .vectors.index import IndexSaveError, IndexUsage

if TYPE_CHECKING:
    from .rerank.service import RerankerService

__all__ = ("ChannelActivity", "Memory", "MemoryOpenError", "MemoryStats")

log = logging.getLogger(__name__)

# Changed indexes are saved this often, so a crash costs at most this much rebuilding work... or none:
# a stale index is detected on start and rebuilt from SQLite either way.
AUTOSAVE_INTERVAL_S = 300.0


class MemoryOpenError(RuntimeError):
    """Memory could not start; the message says what to fix. Already logged in one line."""


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """One guild's memory as /memory stats shows it: its messages, its vector index, and what waits for ingest."""

    messages: int
    index: IndexUsage
    embedding_model: str
    queued: int


@dataclass(frozen=True, slots=True)
class ChannelActivity:
    """One channel (or thread) as memory holds it: how many of its messages, and when the newest was written."""

    channel_id: int
    messages: int
    last_message_at: datetime | None


# After every stored message: the newest is the one just before it.
_END_OF_TIME, _LAST_ID = float("inf"), 2**63 - 1


def _embedder_for(profile: MemoryProfile, device: str, onnx_dir: Path | None) -> EmbeddingService:
    return EmbeddingService(profile.embedding_model, device=device, dtype=profile.dtype,
                            batch_size=profile.embedding_batch_size, onnx_dir=onnx_dir, **_prefixes(profile))


def _prefixes(profile: MemoryProfile) -> dict[str, str | None]:
    return {"query_prefix": profile.embedding_query_prefix, "passage_prefix": profile.embedding_passage_prefix}


class Memory:
    """Facade over a store backend (the store, its vector indexes, search engine and history), the embedding model,
    the ingest queue and the reranker."""

    def __init__(self, profile: MemoryProfile, backend: StoreBackend, embedder: EmbeddingService,
                 indexes: VectorIndexes, ingest: IngestQueue, reranker: RerankerService | None,
                 onnx_dir: Path | None = None, erasures: ErasureLedger | None = None) -> None:
        self.profile = profile
        # Every erasure, kept apart from the database (privacy/ledger.py); None: not kept (a bare test memory).
        self.erasures = erasures
        # What the last ``reapply_erasures`` did: (entries applied again, messages they forgot).
        self.reapplied = (0, 0)
        self.onnx_dir = onnx_dir  # where a local reranker's ONNX export goes (None: the service's default)
        self.backend = backend
        self.store: Store = backend.store
        self.embedder = embedder
        self.indexes = indexes
        self.ingest = ingest
        self.reranker = reranker
        self.search_engine: SearchEngine = backend.search_engine(embedder, indexes, profile)
        self._policy = GuildPolicy(self.store, ingest)
        # What reading channels' history again needs (catch-up, backfill): stored spans and saved progress.
        self.history = backend.history(ingest.write_lock)
        # Guilds' and channels' names as last seen (capture, catch-up, import), for the CLI and the dashboard.
        self.names = PlaceNames(self.store, ingest.write_lock)
        # Every way in (capture, catch-up, backfill, import) meets in the ingest writer, which checks this rule.
        self.admission = Admission(self.store, self.history)
        ingest.admit_by(self.admission.refused)
        self._autosave: asyncio.Task[None] | None = None
        self.purges = PurgeScheduler(self._erase_forgotten)

    @classmethod
    async def open(cls, profile: MemoryProfile, db_path: Path, index_dir: Path,
                   database_url: str | None = None, *, embed_backlog: bool = True,
                   reranker: bool = True) -> Memory:
        """Open the database, load the embedding model and every guild's index (rebuilt if stale), start ingest.

        ``database_url`` (postgresql://...) keeps memory in PostgreSQL instead of the SQLite file at ``db_path``.
        ``embed_backlog=False`` (a read-only command) leaves the stored messages that wait for a vector to the bot
        or the next start: nothing is embedded in the background, and closing does not wait for the model.
        ``reranker=False`` (a CLI command) builds no reranker: ``load_reranker`` does, when a command needs one; the
        bot's profile ``preload`` applies to the bot alone.
        Raises MemoryOpenError (already logged) when the database or the model cannot be used; whatever opened
        before a failure is closed again.
        """
        device = await asyncio.to_thread(resolve_device, profile)
        # What an older version left readable by other users of the machine is made private (0600/0700), before
        # SQLite makes the database's -wal and -shm files after its mode.
        await asyncio.to_thread(tighten_memory_files, db_path, index_dir, db_path.parent / "onnx",
                                (SPOOL_NAME, LEDGER_NAME, PROFILE_CHOICE_PATH.name))
        try:
            backend = await open_backend(db_path, database_url)
        except (StoreOpenError, DatabaseUnavailableError) as exc:
            log.error("Memory cannot start: %s", exc)
            raise MemoryOpenError(str(exc)) from None
        store = backend.store
        async with contextlib.AsyncExitStack() as undo:
            undo.push_async_callback(store.close)
            # The ONNX exports (the query embedder's, a local reranker's) live beside the database.
            onnx_dir = db_path.parent / "onnx"
            embedder = _embedder_for(profile, device, onnx_dir)
            undo.push_async_callback(embedder.close)
            try:
                await embedder.start()
            except EmbeddingModelError as exc:
                log.error("Memory cannot start: %s. Set embedding_model in profile %r to an installed "
                          "sentence-transformers model id or a local model directory.", exc, profile.name)
                raise MemoryOpenError(str(exc)) from None
            indexes = backend.indexes(index_dir, embedder.model_name, embedder.dimension)
            undo.push_async_callback(indexes.close)
            await indexes.load_all()
            await _mark_unembedded(store, embedder.model_name)
            # On PostgreSQL, capture goes on into a local spool while the server is away (spool.py).
            spool = IngestSpool(db_path.parent / SPOOL_NAME) if database_url else None
            ingest = IngestQueue(store, embedder, indexes, batch_size=profile.ingest_batch_size,
                                 queue_size=profile.ingest_queue_size, spool=spool)
            ingest.start(embed=embed_backlog)
            undo.push_async_callback(ingest.close)
            await _prune_tombstones(ingest)
            service = _build_reranker(profile, device, onnx_dir) if reranker else None
            if service is not None:
                undo.push_async_callback(service.aclose)
                await service.tokenizers_loaded()
            memory = cls(profile, backend, embedder, indexes, ingest, service, onnx_dir,
                         ErasureLedger(db_path.parent / LEDGER_NAME))
            await memory.names.load()
            try:  # before anything reads: a restored database holds no erased message
                await memory.reapply_erasures()
            except (OSError, ValueError, sqlite3.Error) as exc:
                log.error("Memory cannot start: applying the erasure ledger %s again failed (%s: %s); fix that and "
                          "start again", memory.erasures.path if memory.erasures else "", type(exc).__name__, exc)
                raise MemoryOpenError(f"applying the erasure ledger again failed: {exc}") from None
            undo.pop_all()
        memory._autosave = asyncio.create_task(memory._autosave_loop(), name="memory-autosave")
        if memory.db_path is None:  # a server other processes may share: what they forget or rename reaches us
            memory.names.start_refreshing()
        log.info("Memory open: profile %s, %s, %d guild index(es)", profile.name, db_path,
                 len(await store.guild_ids()))
        return memory

    async def close(self) -> None:
        """Store what is queued (the vector backlog waits for the next start), erase what was forgotten, save the
        indexes, close the database (and the models' threads).

        Each step runs whatever failed before it, and the database closes last, always: a failure (a full disk, a
        locked database) never leaves the process holding it open. A failure is raised once all is closed.
        """
        async with contextlib.AsyncExitStack() as steps:  # the steps run last pushed, first
            steps.push_async_callback(self.store.close)
            if self.reranker is not None:
                steps.push_async_callback(self.reranker.aclose)
            steps.push_async_callback(self.embedder.close)
            steps.push_async_callback(self.indexes.close)
            steps.push_async_callback(self._erase_forgotten_at_close)
            steps.push_async_callback(self.purges.close)
            steps.push_async_callback(self.names.settle)
            steps.push_async_callback(self.ingest.close)
            steps.push_async_callback(self._stop_autosave)
            steps.push_async_callback(self.names.stop_refreshing)

    async def _stop_autosave(self) -> None:
        if self._autosave is not None:
            self._autosave.cancel()
            await asyncio.gather(self._autosave, return_exceptions=True)

    async def _erase_forgotten_at_close(self) -> None:
        try:
            await self._erase_forgotten()
        except Exception:
            log.exception("Erasing forgotten messages from disk failed at close; it runs again on the next start")

    async def _autosave_loop(self) -> None:
        while True:
            await asyncio.sleep(AUTOSAVE_INTERVAL_S)
            try:
                await self.save()
            except asyncio.CancelledError:
                raise
            except IndexSaveError as exc:
                log.warning("%s; trying again in %.0f s", exc, AUTOSAVE_INTERVAL_S)
            except Exception:
                log.exception("Saving the vector indexes failed; they will be checked and rebuilt on start")

    async def save(self) -> None:
        """Save changed indexes now (between ingest writes, so each file matches SQLite)."""
        async with self.ingest.write_lock:
            await self.indexes.save_dirty()

    async def purge(self) -> bool:
        """Erase what forgets left on disk now, instead of in the background a few seconds later.

        Afterwards no file under the data directory holds a forgotten message: not the database, its WAL, the FTS5
        index, nor the FAISS files (the changed guilds' indexes are saved again). Commands that forget await this
        before they say so. False if a long read kept the WAL busy; it is then retried in the background.
        """
        return await self.purges.now()

    async def _erase_forgotten(self) -> bool:
        async with self.ingest.write_lock:
            if not await self.store.purge_pending():
                return True
            await self.indexes.save_dirty()
            await self.indexes.remove_stale_files()
            return await self.store.erase_forgotten()

    def _forgot(self, count: int) -> int:
        if count:
            self.purges.soon()
        return count

    # -- capture --------------------------------------------------------------------------------------------

    async def add(self, record: MessageRecord) -> None:
        await self.ingest.add(record)

    async def refused(self, records: Sequence[MessageRecord]) -> dict[int, str]:
        """Message id → why, for each of ``records`` memory would not store now (opted out, forgotten, capture off,
        past retention); ``add`` drops those as it writes them."""
        return await self.admission.refused(records)

    async def flush(self, *, vectors: bool = False) -> FlushReport:
        """Wait until what was added is stored (keyword-searchable and durable) and, with ``vectors``, until every
        stored message has its vector; raises ``IngestError`` (with the report) when some of it was not stored.
        The guild and channel names noted meanwhile are stored too. See ``IngestQueue.flush``."""
        report = await self.ingest.flush(vectors=vectors)
        await self.names.settle()  # a name not written now (the database away) is written later: not a failure
        return report

    async def vectors_pending(self) -> int:
        """Stored messages still waiting for their vector (found by their words; by meaning once embedded)."""
        return (await self.store.pending_count())[0]

    # Edits and deletes schedule a purge (``purges``) that erases the old text from disk a few seconds later.

    async def edit(self, message_id: int, content: str, edited_at: datetime | None) -> bool:
        stored = await self.ingest.edit(message_id, content, edited_at)
        if stored:
            self.purges.soon()
        return stored

    async def delete(self, message_ids: Sequence[int]) -> int:
        """Forget messages deleted on Discord (also in the erasure ledger: a restore does not bring them back)."""
        if not message_ids:
            return 0
        erasure = await self._ledger(Erasure.new("deleted", message_ids=tuple(message_ids)))
        return await self._applied(erasure, self._forgot(await self.ingest.delete(message_ids)))

    # Forgetting by request also tells history (catch-up, backfill) and the admission rule never to store that
    # again, and goes in the erasure ledger first (privacy/ledger.py), so that no restore undoes it.

    async def forget_message(self, guild_id: int, message_id: int) -> int:
        erasure = await self._ledger(Erasure.new("forget", guild_id=guild_id, message_ids=(message_id,)))
        return await self._forget(erasure, await self.ingest.delete([message_id]))

    async def delete_channel(self, guild_id: int, channel_id: int) -> int:
        erasure = await self._ledger(Erasure.new("forget", guild_id=guild_id, channel_id=channel_id,
                                                 until=time.time()))
        return await self._forget(erasure, await self.ingest.delete_channel(guild_id, channel_id))

    async def delete_guild(self, guild_id: int) -> int:
        erasure = await self._ledger(Erasure.new("forget", guild_id=guild_id, until=time.time()))
        count = await self._forget(erasure, await self.ingest.delete_guild(guild_id))
        self._policy.forget_guild(guild_id)
        return count

    async def delete_author(self, guild_id: int | None, author_id: int, channel_id: int | None = None) -> int:
        erasure = await self._ledger(Erasure.new("forget", guild_id=guild_id, channel_id=channel_id,
                                                 author_id=author_id, until=time.time()))
        return await self._forget(erasure, await self.ingest.delete_author(guild_id, author_id, channel_id))

    async def _forget(self, erasure: Erasure, count: int) -> int:
        """After ingest forgot what it held (a message still queued is stored first, so it is counted), record the
        exclusion the admission rule and history read, and forget what another process stored meanwhile."""
        count += await ledger.apply(self, erasure)
        return await self._applied(erasure, self._forgot(count))

    async def _ledger(self, erasure: Erasure) -> Erasure:
        """Write ``erasure`` to the ledger file (on disk before the erasure is done: a crash between the two
        leaves it to be applied again as memory next opens)."""
        if self.erasures is not None:
            await self.erasures.append(erasure)
        return erasure

    async def _applied(self, erasure: Erasure, count: int = 0) -> int:
        """Note in the database that it holds ``erasure``: a database restored from before it lacks the note."""
        async with self.ingest.write_lock:
            await self.store.record_erasure(erasure.id, erasure.at, erasure.to_json())
        return count

    async def reapply_erasures(self) -> int:
        """Apply again every erasure of the ledger this database has not recorded (a restored SQLite file, a
        PostgreSQL dump restored), then erase their text from disk; returns how many were applied. Cheap when
        there are none: one read of the file and of the ``erasures`` table.

        Entries another process sharing this PostgreSQL recorded are copied into this ledger file, so that a
        restore of the database cannot undo them either.
        """
        if self.erasures is None:
            return 0
        entries = await self.erasures.read()
        recorded = await self.store.erasures()
        known = {erasure.id for erasure in entries}
        others = [Erasure.from_json(entry) for erasure_id, entry in recorded.items() if erasure_id not in known]
        await self.erasures.append(*sorted(others, key=lambda erasure: erasure.at))
        missing = sorted((erasure for erasure in entries if erasure.id not in recorded), key=lambda e: e.at)
        if not missing:
            return 0
        log.info("Applying %d erasures this database does not hold (it was restored from before them)", len(missing))
        forgotten = 0
        for erasure in missing:
            forgotten += await ledger.apply(self, erasure)
            await self._applied(erasure)
        self.reapplied = (len(missing), forgotten)
        if not await self.purge():
            log.warning("Some re-applied erasures are still in the WAL; the next purge erases them")
        log.info("Applied %d erasures again: %d messages forgotten", len(missing), forgotten)
        return len(missing)

    @property
    def queued(self) -> int:
        """Messages waiting for ingest: not stored yet, or stored and waiting for their vector."""
        return self.ingest.queued

    @property
    def db_path(self) -> Path | None:
        """The local database file; None when memory lives in PostgreSQL."""
        return self.store.local_file()

    def disk_nearly_full(self) -> bool:
        """Whether the disk holding the local database is (nearly) full; False on PostgreSQL, whose disk is the
        server's."""
        path = self.db_path
        return path is not None and disk_nearly_full(path)

    async def known_message_ids(self, message_ids: Sequence[int]) -> tuple[set[int], set[int]]:
        """(stored, deleted): which of ``message_ids`` memory holds, and which were deleted (never stored again)."""
        return await self.store.known_message_ids(message_ids)

    async def has_message(self, message_id: int) -> bool:
        return await self.store.message(message_id) is not None

    async def guild_ids(self) -> list[int]:
        """Every guild (or DM) memory holds messages of."""
        return await self.store.guild_ids()

    # -- guild policy ---------------------------------------------------------------------------------------

    async def settings(self, guild_id: int) -> GuildSettings:
        return await self._policy.settings(guild_id)

    async def save_settings(self, guild_id: int, settings: GuildSettings) -> None:
        """Saves a guild's settings; history never stores what a channel said while its capture was off, and each
        capture switch goes in the erasure ledger."""
        was_off = (await self.settings(guild_id)).capture_disabled_channel_ids
        switched = [Erasure.new("capture_off", guild_id=guild_id, channel_id=channel_id)
                    for channel_id in settings.capture_disabled_channel_ids - was_off]
        switched += [Erasure.new("capture_on", guild_id=guild_id, channel_id=channel_id)
                     for channel_id in was_off - settings.capture_disabled_channel_ids]
        if self.erasures is not None:
            await self.erasures.append(*switched)
        await self._policy.save_settings(guild_id, settings)
        for erasure in switched:
            await self._capture_exclusion(erasure)
            await self._applied(erasure)

    async def switch_capture(self, guild_id: int, channel_id: int, on: bool, *, at: float) -> None:
        """Switch one channel's capture as it was switched at ``at`` (the erasure ledger's re-apply)."""
        disabled = (await self.settings(guild_id)).capture_disabled_channel_ids
        disabled = disabled - {channel_id} if on else disabled | {channel_id}
        settings = (await self.settings(guild_id)).with_changes(capture_disabled_channel_ids=disabled)
        await self._policy.save_settings(guild_id, settings)
        await self._capture_exclusion(Erasure("capture_on" if on else "capture_off", guild_id, channel_id, at=at))

    async def _capture_exclusion(self, erasure: Erasure) -> None:
        assert erasure.guild_id is not None and erasure.channel_id is not None
        if erasure.kind == "capture_off":
            await self.history.exclude(Exclusion(erasure.guild_id, erasure.channel_id, since=erasure.at))
        else:
            await self.history.end_exclusions(erasure.guild_id, erasure.channel_id, erasure.at)

    async def is_opted_out(self, guild_id: int, user_id: int) -> bool:
        return await self._policy.is_opted_out(guild_id, user_id)

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool, *, at: float | None = None,
                          ledger: bool = True) -> None:
        """Opting back in: history still never stores what the member said before (while opted out). ``at`` and
        ``ledger``: the erasure ledger's re-apply of an opt-out or opt-in made then."""
        erasure = Erasure.new("opt_out" if opted_out else "opt_in", guild_id=guild_id, author_id=user_id)
        if ledger:
            await self._ledger(erasure)
        if not opted_out:
            await self.history.exclude(Exclusion(guild_id, author_id=user_id, until=at or erasure.at))
        await self._policy.set_opt_out(guild_id, user_id, opted_out)
        if ledger:
            await self._applied(erasure)

    async def apply_retention(self, now: datetime | None = None) -> int:
        """Forget what each guild's ``retention_days`` no longer keeps; returns how many messages went."""
        return self._forgot(await self._policy.apply_retention(now or datetime.now(UTC)))

    # -- retrieval ------------------------------------------------------------------------------------------

    async def search(self, query: str, filters: SearchFilters, limit: int | None = None) -> list[Candidate]:
        """First-stage hybrid candidates (no reranking), best first."""
        limit = self.profile.search_limit if limit is None else checked_limit(limit)
        return await self.search_engine.search(query, filters, limit)

    async def recall(self, query: str, filters: SearchFilters, limit: int | None = None,
                     rerank: bool = True) -> list[Candidate]:
        """Search, then rerank with the profile's reranker; without one, first-stage order (rerank_score None)."""
        # One snapshot: a live profile switch may replace both while this recall awaits.
        profile, reranker = self.profile, self.reranker
        limit = profile.search_limit if limit is None else checked_limit(limit)
        if not rerank or reranker is None:
            return [{**candidate, "rerank_score": None} for candidate in await self.search(query, filters, limit)]
        candidates = await self.search(query, filters, max(limit, profile.reranker.candidates))
        # The reranker scores texts only (the first `candidates` of them, within its time budget); the order is ours.
        scored = await reranker.ascore(query, [candidate["content"] for candidate in candidates])
        return reranked(candidates, scored.scores, profile.reranker.min_score, limit)

    async def load_reranker(self) -> bool:
        """Build the profile's reranker if memory opened without one (a CLI command), and wait until it has loaded
        (a first use downloads and exports it). False when nothing can rerank: recalls keep first-stage order."""
        if self.reranker is None:
            if not reranks(self.profile):
                return False
            device = await asyncio.to_thread(resolve_device, self.profile)
            self.reranker = await asyncio.to_thread(_build_reranker, self.profile, device, self.onnx_dir)
        return self.reranker is not None and await self.reranker.aload()

    async def stats(self, guild_id: int) -> MemoryStats:
        return MemoryStats(await self.store.count_messages(guild_id), await self.indexes.usage(guild_id),
                           self.embedder.display_name, self.ingest.queued)

    async def channel_activity(self, guild_id: int) -> list[ChannelActivity]:
        """Every channel memory holds messages of in ``guild_id``, by id (``names`` holds their names, when seen)."""
        activity = []
        for channel_id in await self.store.channel_ids(guild_id):
            count = len(await self.store.refs_for_channel(guild_id, channel_id))
            newest = await self.store.previous_in_channel(guild_id, channel_id, _END_OF_TIME, _LAST_ID)
            when = None if newest is None else datetime.fromtimestamp(newest.created_at, UTC)
            activity.append(ChannelActivity(channel_id, count, when))
        return activity

    # -- profiles -------------------------------------------------------------------------------------------

    async def switch_profile(self, profile: MemoryProfile) -> None:
        """Apply another profile live; on failure the current profile stays whole and ``ProfileError`` says why.

        The new models load first, beside the old ones; only then is anything swapped. A new embedding model
        re-embeds every stored message before it is used.
        """
        device = await asyncio.to_thread(resolve_device, profile)
        same_embedder = (profile.embedding_model, device, profile.dtype, _prefixes(profile)) == (
            self.profile.embedding_model, self.embedder.device, self.profile.dtype, _prefixes(self.profile))
        embedder = self.embedder
        if not same_embedder:
            embedder = _embedder_for(profile, device, self.onnx_dir)
            await embedder.start()  # a model that cannot load raises here, with nothing changed yet
        if (self.reranker is not None and reranks(profile)
                and not await self.reranker.switch(profile, device=device)):
            if embedder is not self.embedder:
                await embedder.close()
            raise ProfileError(f"the reranker of profile {profile.name!r} did not load: "
                               f"{self.reranker.status().last_switch_error}")
        embedder.batch_size = profile.embedding_batch_size
        await self.ingest.settle(vectors=False)
        async with self.ingest.write_lock:
            indexes = self.indexes
            if embedder.model_name != self.embedder.model_name:
                await reembed_all(self.store, embedder)
                await self.store.resolve_embedded(embedder.model_name)
                await self.indexes.close()
                indexes = self.backend.indexes(self.indexes.directory, embedder.model_name, embedder.dimension)
                await indexes.load_all()
            old = self.embedder
            self.ingest.use(embedder, indexes, batch_size=profile.ingest_batch_size)
            self.embedder, self.indexes, self.profile = embedder, indexes, profile
            self.search_engine = self.backend.search_engine(embedder, indexes, profile)
        if old is not embedder:
            await old.close()
        if self.reranker is not None and not reranks(profile):
            await self.reranker.aclose()
            self.reranker = None
        elif self.reranker is None:
            self.reranker = _build_reranker(profile, device, self.onnx_dir)
        log.info("Memory switched to profile %s", profile.name)


async def _prune_tombstones(ingest: IngestQueue) -> None:
    """Prune old tombstones as memory opens, if the database lets it: a start must not need to write."""
    try:
        await ingest.prune_tombstones()
    except sqlite3.OperationalError as exc:  # another process holds the write lock, or the disk is full
        log.warning("Could not prune old tombstones now (%s); a later delete does", exc)


async def _mark_unembedded(store: Store, model: str) -> None:
    """Mark the stored messages with no vector under ``model`` as waiting for one, so the vector filler embeds them
    in the background: after a restart with another embedding model or input form (embedding.INPUT_FORM)."""
    try:
        marked = await store.mark_unembedded(model)
    except sqlite3.OperationalError as exc:  # another process holds the write lock, or the disk is full
        log.warning("Could not mark the stored messages without a vector for %s now (%s); the next start does",
                    model, exc)
        return
    if marked:
        log.info("%d stored messages have no vector for %s; they are embedded in the background", marked, model)


def _build_reranker(profile: MemoryProfile, device: str, onnx_dir: Path | None) -> RerankerService | None:
    if not reranks(profile):
        return None
    from .rerank.service import RerankerService  # loads torch: only when a profile reranks

    if onnx_dir is None:
        return RerankerService(profile, device=device)
    return RerankerService(profile, device=device, export_dir=onnx_dir)
