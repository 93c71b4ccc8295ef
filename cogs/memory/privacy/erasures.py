"""Erasures: every forget, delete on Discord, opt-out or opt-in and capture switch is written to the erasure ledger
first (ledger.py), then done to the database, then noted in the database's ``erasures`` table; as memory opens, the two
records are merged (known.py) and every entry a restored database lacks the note of is done again, so that no restore
undoes an erasure. An erasure the ledger cannot record is not done (``ErasureNotRecorded``), except what Discord
already deleted, which is forgotten all the same (see ``deleted``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from ..guild_policy import GuildSettings
from ..store.history import Exclusion
from ..store.rows import RowRef
from .known import KnownErasures, reconcile
from .ledger import Erasure, ErasureLedger, ErasureNotRecorded

__all__ = ("ErasureNotRecorded", "ErasureStore", "Erasures", "ForgettingQueue", "GuildSwitches", "Names", "NeverAgain",
           "Purges")

log = logging.getLogger(__name__)


class ErasureStore(Protocol):
    """What erasures need of the store: the stored messages a forget picks, and the note of each erasure done."""

    async def refs_for_author(self, guild_id: int | None, author_id: int) -> list[RowRef]: ...
    async def refs_for_channel(self, guild_id: int, channel_id: int) -> list[RowRef]: ...
    async def refs_for_guild(self, guild_id: int) -> list[RowRef]: ...
    async def erasures(self) -> dict[str, str]: ...
    async def record_erasure(self, erasure_id: str, at: float, entry: str) -> None: ...


class ForgettingQueue(Protocol):
    """The ingest queue's forgets (ingest/queue.py), which keep the store and the vector indexes in step."""

    @property
    def write_lock(self) -> asyncio.Lock: ...
    async def delete(self, message_ids: Sequence[int]) -> int: ...
    async def delete_channel(self, guild_id: int, channel_id: int) -> int: ...
    async def delete_guild(self, guild_id: int) -> int: ...
    async def delete_author(self, guild_id: int | None, author_id: int, channel_id: int | None = None) -> int: ...
    async def erase(self, select: Callable[[], Awaitable[list[RowRef]]]) -> int: ...


class NeverAgain(Protocol):
    """What reading history again (catch-up, backfill) and the admission rule must never store again."""

    async def exclude(self, exclusion: Exclusion) -> None: ...
    async def end_exclusions(self, guild_id: int, channel_id: int, until: float) -> None: ...
    async def forget(self, guild_id: int, channel_id: int | None = None) -> None: ...


class Names(Protocol):
    """Guilds' and channels' names as last seen (ingest/names.py): a forgotten place leaves no name behind."""

    async def forget(self, guild_id: int, channel_id: int | None = None) -> int: ...


class Purges(Protocol):
    """When forgotten text is erased from the store's files (purge_schedule.py)."""

    def soon(self) -> None: ...
    async def now(self) -> bool: ...


class GuildSwitches(Protocol):
    """The guild policy (settings.py): its settings, which hold the capture switches, and its members' opt-outs."""

    async def settings(self, guild_id: int) -> GuildSettings: ...
    async def save_settings(self, guild_id: int, settings: GuildSettings) -> None: ...
    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None: ...
    def forget_guild(self, guild_id: int) -> None: ...


class Erasures:
    """Records each erasure (ledger first, then the database, then the note) and applies the ledger again.

    ``ledger`` None keeps no file (a bare test memory): erasures are done and noted, and no restore is guarded.
    """

    def __init__(self, ledger: ErasureLedger | None, store: ErasureStore, ingest: ForgettingQueue,
                 history: NeverAgain, names: Names, purges: Purges, policy: GuildSwitches) -> None:
        self.ledger = ledger
        self._store = store
        self._ingest = ingest
        self._history = history
        self._names = names
        self._purges = purges
        self._policy = policy
        # What the last ``reapply`` did: (entries applied again, messages they forgot).
        self.reapplied = (0, 0)
        # Deletes done while the ledger could not be written, written with its next append (the database's notes
        # of them are copied into it as memory next opens, too).
        self._owed: list[Erasure] = []

    # Forgetting by request also tells history (catch-up, backfill) and the admission rule never to store that
    # again. Each count is of the messages forgotten; a purge erases their text from disk a few seconds later. Each
    # raises ErasureNotRecorded, having done nothing, when the ledger cannot be written; with ``on_discord`` (Discord
    # deleted it already: a channel, a thread, the bot's guild, a member who left) it is done all the same.

    async def deleted(self, message_ids: Sequence[int]) -> int:
        """Forget messages deleted on Discord, even when the ledger cannot record it (``_record_anyway``)."""
        if not message_ids:
            return 0
        erasure = await self._record_anyway(Erasure.new("deleted", message_ids=tuple(message_ids)))
        return await self._applied(erasure, self._forgot(await self._ingest.delete(message_ids)))

    async def forget_message(self, guild_id: int, message_id: int) -> int:
        erasure = await self._ledger(Erasure.new("forget", guild_id=guild_id, message_ids=(message_id,)))
        return await self._forget(erasure, await self._ingest.delete([message_id]))

    async def forget_channel(self, guild_id: int, channel_id: int, *, on_discord: bool = False) -> int:
        """Forget a channel and its threads."""
        erasure = await self._recorded(Erasure.new("forget", guild_id=guild_id, channel_id=channel_id,
                                                   until=time.time()), on_discord)
        return await self._forget(erasure, await self._ingest.delete_channel(guild_id, channel_id))

    async def forget_guild(self, guild_id: int, *, on_discord: bool = False) -> int:
        erasure = await self._recorded(Erasure.new("forget", guild_id=guild_id, until=time.time()), on_discord)
        count = await self._forget(erasure, await self._ingest.delete_guild(guild_id))
        self._policy.forget_guild(guild_id)
        return count

    async def forget_author(self, guild_id: int | None, author_id: int, channel_id: int | None = None, *,
                            on_discord: bool = False) -> int:
        """Forget a member's messages in a guild (everywhere with ``guild_id`` None; or in one channel)."""
        erasure = await self._recorded(Erasure.new("forget", guild_id=guild_id, channel_id=channel_id,
                                                   author_id=author_id, until=time.time()), on_discord)
        return await self._forget(erasure, await self._ingest.delete_author(guild_id, author_id, channel_id))

    async def set_opt_out(self, guild_id: int, user_id: int, opted_out: bool) -> None:
        """Opting back in: history still never stores what the member said before (while opted out)."""
        erasure = await self._ledger(Erasure.new("opt_out" if opted_out else "opt_in", guild_id=guild_id,
                                                 author_id=user_id))
        await self._switch_opt_out(erasure)
        await self._applied(erasure)

    async def save_settings(self, guild_id: int, settings: GuildSettings) -> None:
        """Save a guild's settings; history never stores what a channel said while its capture was off."""
        was_off = (await self._policy.settings(guild_id)).capture_disabled_channel_ids
        switched = [Erasure.new("capture_off", guild_id=guild_id, channel_id=channel_id)
                    for channel_id in settings.capture_disabled_channel_ids - was_off]
        switched += [Erasure.new("capture_on", guild_id=guild_id, channel_id=channel_id)
                     for channel_id in was_off - settings.capture_disabled_channel_ids]
        await self._write(*switched)
        await self._policy.save_settings(guild_id, settings)
        for erasure in switched:
            await self._capture_exclusion(erasure)
            await self._applied(erasure)

    async def reapply(self, known: KnownErasures | None = None) -> int:
        """Apply again every erasure of the ledger the database has not noted (a restored SQLite file, a PostgreSQL
        dump restored), then erase their text from disk; returns how many were applied. Cheap when there are none:
        one read of the file and of the ``erasures`` table.

        ``known``: the two records as ``known.reconcile`` merged them as memory opened (read now when None); that
        also wrote into this ledger file what the database holds and it lacked (another process sharing this
        PostgreSQL, a ledger deleted or damaged), so that a restore of the database cannot undo those either.
        """
        if self.ledger is None:
            return 0
        if known is None:
            known = await reconcile(self.ledger, self._store)
        missing = known.unapplied
        if not missing:
            return 0
        log.info("Applying %d erasures this database does not hold (it was restored from before them)", len(missing))
        forgotten = 0
        for erasure in missing:
            forgotten += await self._apply(erasure)
            await self._applied(erasure)
        self.reapplied = (len(missing), forgotten)
        if not await self._purges.now():
            log.warning("Some re-applied erasures are still in the WAL; the next purge erases them")
        log.info("Applied %d erasures again: %d messages forgotten", len(missing), forgotten)
        return len(missing)

    async def _ledger(self, erasure: Erasure) -> Erasure:
        """Write ``erasure`` to the ledger file (on disk before the erasure is done: a crash between the two leaves
        it to be applied again as memory next opens). Raises ErasureNotRecorded when the file cannot be written:
        the caller then does nothing."""
        await self._write(erasure)
        return erasure

    async def _write(self, *erasures: Erasure) -> None:
        """Append ``erasures`` to the ledger, after any delete it owes (``_record_anyway``)."""
        if self.ledger is None:
            return
        owed = self._owed
        await self.ledger.append(*owed, *erasures)
        if owed:
            self._owed = []
            log.info("The erasure ledger %s records again: wrote the %d delete(s) it missed", self.ledger.path,
                     len(owed))

    async def _recorded(self, erasure: Erasure, on_discord: bool) -> Erasure:
        return await (self._record_anyway(erasure) if on_discord else self._ledger(erasure))

    async def _record_anyway(self, erasure: Erasure) -> Erasure:
        """The ledger first, as always; when it cannot be written, the erasure is done all the same.

        What Discord already deleted is not kept because the disk is full: it is forgotten from the database, whose
        note of it the ledger copies as memory next opens (or with its next append), with one WARNING while the
        ledger fails. Until then a restore of an older database would bring it back.
        """
        try:
            return await self._ledger(erasure)
        except ErasureNotRecorded as error:
            if not self._owed:
                log.warning("Could not record a delete on Discord in the erasure ledger %s (%s): it is forgotten "
                            "from the database all the same, but a backup restored before the ledger records it "
                            "could bring it back. Free some space (or make the file writable)", error.path,
                            error.reason)
            self._owed.append(erasure)
            return erasure

    async def _forget(self, erasure: Erasure, count: int) -> int:
        """After ingest forgot what it held (a message still queued is stored first, so it is counted), record the
        exclusion the admission rule and history read, and forget what another process stored meanwhile."""
        count += await self._apply(erasure)
        return await self._applied(erasure, self._forgot(count))

    def _forgot(self, count: int) -> int:
        if count:
            self._purges.soon()
        return count

    async def _applied(self, erasure: Erasure, count: int = 0) -> int:
        """Note in the database that it holds ``erasure``: a database restored from before it lacks the note."""
        async with self._ingest.write_lock:
            await self._store.record_erasure(erasure.id, erasure.at, erasure.to_json())
        return count

    # -- applying one entry (as it is recorded, and again after a restore) ----------------------------------------

    async def _apply(self, erasure: Erasure) -> int:
        """Make the database say what ``erasure`` said when it was made (idempotent); returns the messages forgotten.

        Nothing is buried "as of now": what was said after the erasure (a forgotten channel's later messages) stays.
        """
        if erasure.kind == "forget":
            return await self._apply_forget(erasure)
        if erasure.kind == "deleted":
            return await self._ingest.delete(list(erasure.message_ids))
        guild_id, channel_id, author_id, at = erasure.guild_id, erasure.channel_id, erasure.author_id, erasure.at
        assert guild_id is not None
        if erasure.kind in ("opt_out", "opt_in"):
            assert author_id is not None
            await self._switch_opt_out(erasure)
            if erasure.kind == "opt_in":
                return 0
            return await self._ingest.erase(lambda: self._by_author(guild_id, author_id, 0.0, None, None))
        assert channel_id is not None
        await self._switch_capture(erasure)
        if erasure.kind == "capture_on":
            return 0
        return await self._ingest.erase(lambda: self._in_channel(guild_id, channel_id, at, None))

    async def _apply_forget(self, erasure: Erasure) -> int:
        since, until = erasure.since, erasure.until
        await self._history.exclude(_exclusion(erasure))
        if erasure.message_ids:
            return await self._ingest.delete(list(erasure.message_ids))
        guild_id, channel_id, author_id = erasure.guild_id, erasure.channel_id, erasure.author_id
        if author_id is not None:  # a member (in one channel): as ``IngestQueue.delete_author`` picks them
            return await self._ingest.erase(lambda: self._by_author(guild_id, author_id, since, until, channel_id))
        assert guild_id is not None
        await self._history.forget(guild_id, channel_id)
        if await self._names.forget(guild_id, channel_id):  # a forgotten place leaves no name behind either
            self._purges.soon()
        if channel_id is not None:  # the channel and its threads
            return await self._ingest.erase(lambda: self._in_channel(guild_id, channel_id, since, until))
        return await self._ingest.erase(lambda: self._in_guild(guild_id, since, until))

    async def _switch_opt_out(self, erasure: Erasure) -> None:
        guild_id, author_id = erasure.guild_id, erasure.author_id
        assert guild_id is not None and author_id is not None
        opted_out = erasure.kind == "opt_out"
        if not opted_out:
            await self._history.exclude(Exclusion(guild_id, author_id=author_id, until=erasure.at))
        await self._policy.set_opt_out(guild_id, author_id, opted_out)

    async def _switch_capture(self, erasure: Erasure) -> None:
        """Switch one channel's capture as it was switched when ``erasure`` was made."""
        guild_id, channel_id = erasure.guild_id, erasure.channel_id
        assert guild_id is not None and channel_id is not None
        disabled = (await self._policy.settings(guild_id)).capture_disabled_channel_ids
        disabled = disabled | {channel_id} if erasure.kind == "capture_off" else disabled - {channel_id}
        settings = (await self._policy.settings(guild_id)).with_changes(capture_disabled_channel_ids=disabled)
        await self._policy.save_settings(guild_id, settings)
        await self._capture_exclusion(erasure)

    async def _capture_exclusion(self, erasure: Erasure) -> None:
        assert erasure.guild_id is not None and erasure.channel_id is not None
        if erasure.kind == "capture_off":
            await self._history.exclude(Exclusion(erasure.guild_id, erasure.channel_id, since=erasure.at))
        else:
            await self._history.end_exclusions(erasure.guild_id, erasure.channel_id, erasure.at)

    async def _by_author(self, guild_id: int | None, author_id: int, since: float, until: float | None,
                         channel_id: int | None) -> list[RowRef]:
        return _span(await self._store.refs_for_author(guild_id, author_id), since, until, channel_id)

    async def _in_channel(self, guild_id: int, channel_id: int, since: float, until: float | None) -> list[RowRef]:
        return _span(await self._store.refs_for_channel(guild_id, channel_id), since, until)

    async def _in_guild(self, guild_id: int, since: float, until: float | None) -> list[RowRef]:
        return _span(await self._store.refs_for_guild(guild_id), since, until)


def _exclusion(erasure: Erasure) -> Exclusion:
    """What a forget tells history and the admission rule never to store again."""
    message_id = erasure.message_ids[0] if len(erasure.message_ids) == 1 else None
    return Exclusion(erasure.guild_id, erasure.channel_id, erasure.author_id, message_id, erasure.since,
                     erasure.until)


def _span(refs: list[RowRef], since: float, until: float | None, channel_id: int | None = None) -> list[RowRef]:
    """The refs created from ``since`` to ``until``, in ``channel_id`` where one is given."""
    return [ref for ref in refs if since <= ref.created_at and (until is None or ref.created_at <= until)
            and (channel_id is None or ref.channel_id == channel_id)]
