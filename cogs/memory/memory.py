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
from typing import TYPE_CHECKING

from . import models
from .models import ModelsInUse
from .privacy.admission import Admission
from .privacy.erasures import Erasures
from .privacy.known import ErasuresUnreadable, known_at_open
from .privacy.ledger import LEDGER_NAME, ErasureLedger
from .privacy.purge_schedule import PurgeScheduler
from .privacy.quotations import QuotationLog
from .privacy.subject_access import SubjectAccess
from .store.backend import open_backend
from .vectors.embedding import EmbeddingModelError, EmbeddingService
from .ingest.names import PlaceNames
from .ingest.queue import FlushReport, IngestQueue
from .ingest.reembed import mark_unembedded
from .runtime.config import PROFILE_CHOICE_PATH
from .runtime.hub_probe import settle_hub_mode
from .runtime.private_files import tighten_memory_files
from .runtime.profile import MemoryProfile, reranks, resolve_device
from .records import (ChannelActivity, Hit, MemoryStats, MessageRecord, Recall, RerankFigures, SearchFilters,
                      checked_limit)
from .search.pool import judged, pool
from .search.second_stage import reranked
from .guild_policy import GuildPolicy, GuildSettings
from .ingest.spool import SPOOL_NAME, IngestSpool
from .store.rows import AuthorSeen, authors_of
from .store.protocol import (DatabaseUnavailableError, SearchEngine, Store, StoreBackend, StoreOpenError,
                             VectorIndexes)
from .vectors.files import disk_nearly_full
from .vectors.index import IndexSaveError

if TYPE_CHECKING:
    from .rerank.service import RerankerService

__all__ = ("ChannelActivity", "DatabaseUnreachableError", "Memory", "MemoryOpenError", "MemoryStats")

log = logging.getLogger(__name__)

# Changed indexes are saved this often, so a crash costs at most this much rebuilding work... or none:
# a stale index is detected on start and rebuilt from SQLite either way.
AUTOSAVE_INTERVAL_S = 300.0


class MemoryOpenError(RuntimeError):
    """Memory could not start; the message says what to fix. Not logged: the caller says it, once."""


class DatabaseUnreachableError(MemoryOpenError):
    """The database server cannot be reached now: opening again later may work (other errors need a person)."""


# After every stored message: the newest is the one just before it.
_END_OF_TIME, _LAST_ID = float("inf"), 2**63 - 1


class Memory:
    """Facade over a store backend (the store, its vector indexes, search engine and history), the embedding model,
    the ingest queue and the reranker."""

    def __init__(self, profile: MemoryProfile, backend: StoreBackend, embedder: EmbeddingService,
                 indexes: VectorIndexes, ingest: IngestQueue, reranker: RerankerService | None, *,
                 index_dir: Path, onnx_dir: Path | None = None, ledger: ErasureLedger | None = None) -> None:
        self.profile = profile
        self.index_dir = index_dir  # where a profile switch's new vector indexes go (SQLite's FAISS files)
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
        # Every forget, delete, opt-out and capture switch, kept in force through restores by the erasure ledger
        # (``ledger`` None: not kept, a bare test memory).
        self.erasures = Erasures(ledger, self.store, ingest, self.history, self.names, self.purges, self._policy)
        self.subject_access = SubjectAccess(self.store)
        self.quotations = QuotationLog(self.store, ingest.write_lock, self._policy.settings)

    @classmethod
    async def open(cls, profile: MemoryProfile, db_path: Path, index_dir: Path,
                   database_url: str | None = None, *, embed_backlog: bool = True,
                   reranker: bool = True, load_models: bool = True) -> Memory:
        """Open the database, load the embedding model and every guild's index (rebuilt if stale), start ingest.

        ``database_url`` (postgresql://...) keeps memory in PostgreSQL instead of the SQLite file at ``db_path``.
        ``embed_backlog=False`` (a read-only command) leaves the stored messages that wait for a vector to the bot
        or the next start: nothing is embedded in the background, and closing does not wait for the model.
        ``reranker=False`` (a CLI command) builds no reranker: ``load_reranker`` does, when a command needs one; the
        bot's profile ``preload`` applies to the bot alone.
        Raises DatabaseUnreachableError when the database server cannot be reached now, MemoryOpenError (saying what
        to fix) when the database or the model cannot be used; whatever opened before a failure is closed again.
        ``load_models=False`` (a light command: stats, forget...) loads no embedding model and no vector index: a
        guild's index loads when first changed (a forget), and nothing can be embedded or searched by meaning.
        """
        device = await asyncio.to_thread(resolve_device, profile)
        # What an older version left readable by other users of the machine is made private (0600/0700), before
        # SQLite makes the database's -wal and -shm files after its mode.
        await asyncio.to_thread(tighten_memory_files, db_path, index_dir, db_path.parent / "onnx",
                                (SPOOL_NAME, LEDGER_NAME, PROFILE_CHOICE_PATH.name))
        try:
            backend = await open_backend(db_path, database_url)
        except DatabaseUnavailableError as exc:
            raise DatabaseUnreachableError(str(exc)) from None
        except StoreOpenError as exc:
            raise MemoryOpenError(str(exc)) from None
        store = backend.store
        async with contextlib.AsyncExitStack() as undo:
            undo.push_async_callback(store.close)
            ledger = ErasureLedger(db_path.parent / LEDGER_NAME)
            try:  # before anything reads: both records hold every erasure
                known = await known_at_open(ledger, store, None if database_url else db_path)
            except ErasuresUnreadable as exc:
                raise MemoryOpenError(str(exc)) from None
            # The ONNX exports (the query embedder's, a local reranker's) live beside the database.
            onnx_dir = db_path.parent / "onnx"
            embedder = models.embedder_for(profile, device, onnx_dir)
            undo.push_async_callback(embedder.close)
            try:
                if load_models:
                    await embedder.start()
            except EmbeddingModelError as exc:
                raise MemoryOpenError(f"{exc}. Set embedding_model in profile {profile.name!r} to an installed "
                                      "sentence-transformers model id or a local model directory.") from None
            # Dimension 0: each guild's index loads on first use, with its own (vectors/registry.py).
            indexes = backend.indexes(index_dir, embedder.model_name, embedder.dimension if load_models else 0)
            undo.push_async_callback(indexes.close)
            await indexes.load_all()
            await mark_unembedded(store, embedder.model_name)
            # On PostgreSQL, capture goes on into a local spool while the server is away (spool.py).
            spool = IngestSpool(db_path.parent / SPOOL_NAME) if database_url else None
            ingest = IngestQueue(store, embedder, indexes, batch_size=profile.ingest_batch_size,
                                 queue_size=profile.ingest_queue_size, spool=spool)
            undo.push_async_callback(ingest.close)
            await ingest.prune_tombstones_if_free()
            if reranker and models.needs_hub(profile):  # the probe (up to 2 s) off the loop, before any load
                await asyncio.to_thread(settle_hub_mode)
            service = models.build_reranker(profile, device, onnx_dir) if reranker else None
            if service is not None:
                undo.push_async_callback(service.aclose)
                await service.tokenizers_loaded()
            memory = cls(profile, backend, embedder, indexes, ingest, service, index_dir=index_dir,
                         onnx_dir=onnx_dir, ledger=ledger)
            await memory.names.load()
            try:  # before anything reads: a restored database holds no erased message
                await memory.erasures.reapply(known)
            except (OSError, ValueError, sqlite3.Error) as exc:
                raise MemoryOpenError(f"applying the erasure ledger {ledger.path} again failed ({type(exc).__name__}: "
                                      f"{exc}); fix that and start again") from None
            ingest.start(embed=embed_backlog)  # only now: what the spool kept is written under the admission rule
            undo.pop_all()
        memory._autosave = asyncio.create_task(memory._autosave_loop(), name="memory-autosave")
        memory.quotations.start()
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
            steps.push_async_callback(self.quotations.close)  # what it noted is written before the store closes
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

    # Erasures (privacy/erasures.py) go in the erasure ledger first, so that no restore undoes them; forgetting by
    # request also tells history (catch-up, backfill) and the admission rule never to store that again. A ledger that
    # cannot be written raises ErasureNotRecorded and nothing is done, except for what Discord deleted (``delete``,
    # and ``on_discord``): that is forgotten all the same, with a warning.

    async def delete(self, message_ids: Sequence[int]) -> int:
        """Forget messages deleted on Discord."""
        return await self.erasures.deleted(message_ids)

    async def forget_message(self, guild_id: int, message_id: int) -> int:
        """Forget one message of ``guild_id``; a message stored under another guild is not this guild's to forget
        (a link or id from elsewhere forgets nothing there)."""
        stored = await self.store.message(message_id)
        if stored is not None and stored.guild_id != guild_id:
            return 0
        return await self.erasures.forget_message(guild_id, message_id)

    async def forget_channel(self, guild_id: int, channel_id: int, *, on_discord: bool = False) -> int:
        """Forget a channel and its threads."""
        return await self.erasures.forget_channel(guild_id, channel_id, on_discord=on_discord)

    async def forget_guild(self, guild_id: int, *, on_discord: bool = False) -> int:
        return await self.erasures.forget_guild(guild_id, on_discord=on_discord)

    async def forget_author(self, guild_id: int | None, author_id: int, channel_id: int | None = None, *,
                            on_discord: bool = False) -> int:
        """Forget a member's messages in a guild (everywhere with ``guild_id`` None; or in one channel)."""
        return await self.erasures.forget_author(guild_id, author_id, channel_id, on_discord=on_discord)

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

    async def stored_channel(self, guild_id: int, message_id: int) -> int | None:
        """The channel (or thread) a stored message of ``guild_id`` was said in; None when this guild holds no such
        message (another guild's message included)."""
        stored = await self.store.message(message_id)
        return stored.channel_id if stored is not None and stored.guild_id == guild_id else None

    async def written_by(self, guild_id: int, author_id: int, message_id: int) -> bool:
        """Whether memory holds ``message_id`` as written by ``author_id`` in ``guild_id`` (what memory stored is what
        decides who may forget it, whatever Discord shows now)."""
        return any(ref.message_id == message_id for ref in await self.store.refs_for_author(guild_id, author_id))

    async def guild_ids(self) -> list[int]:
        """Every guild (or DM) memory holds messages of."""
        return await self.store.guild_ids()

    async def authors(self, guild_id: int) -> list[AuthorSeen]:
        """Every author of the guild's stored messages (id, name as last seen, count), most messages first."""
        return authors_of(await self.store.author_names(guild_id))

    # -- guild policy ---------------------------------------------------------------------------------------

    async def settings(self, guild_id: int) -> GuildSettings:
        return await self._policy.settings(guild_id)

    async def save_settings(self, guild_id: int, settings: GuildSettings) -> None:
        """Saves a guild's settings; history never stores what a channel said while its capture was off, and each
        capture switch goes in the erasure ledger."""
        await self.erasures.save_settings(guild_id, settings)

    async def is_opted_out(self, guild_id: int, user_id: int) -> bool:
        return await self._policy.is_opted_out(guild_id, user_id)

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        """Opting back in: history still never stores what the member said before (while opted out)."""
        await self.erasures.set_opt_out(guild_id, user_id, opted_out)

    async def apply_retention(self, now: datetime | None = None) -> int:
        """Forget what each guild's ``retention_days`` no longer keeps (and old quotation notes); how many messages."""
        await self.quotations.prune((now or datetime.now(UTC)).timestamp())
        return self._forgot(await self._policy.apply_retention(now or datetime.now(UTC)))

    # -- retrieval ------------------------------------------------------------------------------------------

    async def search(self, query: str, filters: SearchFilters, limit: int | None = None) -> list[Hit]:
        """First-stage hybrid candidates (no reranking), best first."""
        limit = self.profile.search_limit if limit is None else checked_limit(limit)
        return await self.search_engine.search(query, filters, limit)

    async def recall(self, query: str, filters: SearchFilters, limit: int | None = None,
                     rerank: bool = True) -> Recall:
        """Search, then rerank with the profile's reranker; without one, first-stage order (rerank_score None).
        The record says what this call did: its hits, each stage's time and the reranker's figures."""
        # One snapshot: a live profile switch may replace both while this recall awaits.
        profile, reranker = self.profile, self.reranker
        limit = profile.search_limit if limit is None else checked_limit(limit)
        started = time.perf_counter()
        if not rerank or reranker is None:
            hits = await self._still_stored(await self.search(query, filters, limit))
            searched_ms = 1000 * (time.perf_counter() - started)
            return Recall(tuple(hits), len(hits), searched_ms, searched_ms)
        depth = max(limit, reranker.depth)
        # The pool (search/pool.py): the first stage's hits, the strongest bringing their context if the tuning says
        # (what the first stage read of it is read once).
        engine = self.search_engine
        found = await engine.searched(query, filters, depth)
        first = list(found.hits)
        pooled = await pool(engine, first, filters, depth, engine.tuning, found.context)
        searched = time.perf_counter()
        # The reranker scores texts only (the first `candidates` of them, within its time budget); the order is ours.
        scored = await reranker.ascore(query, [entry.text for entry in pooled])
        done = time.perf_counter()
        figures = RerankFigures(1000 * (done - searched), scored.offered, scored.scored, scored.cached, scored.by)
        ranked = await self._still_stored(reranked(*judged(pooled, scored.scores, first), profile.reranker.min_score,
                                                   None))
        hits = ranked[:limit]
        return Recall(tuple(hits), len(pooled), 1000 * (searched - started), 1000 * (done - started),
                      figures if scored.offered else None)

    async def _still_stored(self, hits: list[Hit]) -> list[Hit]:
        """``hits`` less any message deleted or forgotten since the search read it: a recall waits seconds for the
        reranker, and an automod's delete or a member's forget in that time must not be shown by a recall that had
        already read the message. One indexed read of the hits' ids."""
        if not hits:
            return hits
        stored, _ = await self.store.known_message_ids([hit.message_id for hit in hits])
        return [hit for hit in hits if hit.message_id in stored]

    async def load_reranker(self) -> bool:
        """Build the profile's reranker if memory opened without one (a CLI command), and wait until it has loaded
        (a first use downloads and exports it). False when nothing can rerank: recalls keep first-stage order."""
        if self.reranker is None:
            if not reranks(self.profile):
                return False
            device = await asyncio.to_thread(resolve_device, self.profile)
            self.reranker = await asyncio.to_thread(models.build_reranker, self.profile, device, self.onnx_dir)
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
        current = ModelsInUse(self.profile, self.embedder, self.indexes, self.reranker)
        self.reranker = await models.switch_profile(current, profile, self.backend, self.ingest, self._use,
                                                    index_dir=self.index_dir, onnx_dir=self.onnx_dir)

    def _use(self, switched: ModelsInUse) -> None:
        self.profile, self.embedder, self.indexes = switched.profile, switched.embedder, switched.indexes
        self.reranker = switched.reranker
        self.search_engine = self.backend.search_engine(switched.embedder, switched.indexes, switched.profile)
