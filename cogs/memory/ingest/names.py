"""Guilds' and channels' names as memory last saw them. An in-memory map mirrors the store's names, so noting a name
that did not change costs a dict look-up (every captured message notes its channel's); a new or changed name is
written in the background, in batches, between ingest writes. Forgetting a place forgets its names, in both. On a store
other processes share (PostgreSQL), the map is read again now and then, so what they forget or rename shows here too."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ..store.protocol import DatabaseUnavailableError, PlaceNameStore
from ..store.rows import PlaceName

__all__ = ("PlaceNames",)

log = logging.getLogger(__name__)

Key = tuple[int, str, int]

# How old this process's copy of the names may grow on a store other processes share (PostgreSQL): a name another
# process forgot (or renamed) stops showing here (dashboard, CLI) within this many seconds. The read is a few rows a
# channel, so twice a minute costs the server little; a forget elsewhere should not stay readable here much longer.
REFRESH_INTERVAL_S = 30.0


class PlaceNames:
    """The names of guilds and channels (threads too, with their parent), last seen wins.

    Call ``load`` once the store is open. ``note_*`` never waits: what changed is written by a background task
    (under the ingest ``write_lock``); ``flush`` and ``settle`` wait for it. On a shared store, ``start_refreshing``
    reads the names again every ``REFRESH_INTERVAL_S`` until ``stop_refreshing``.
    """

    def __init__(self, store: PlaceNameStore, write_lock: asyncio.Lock) -> None:
        self._store = store
        self._write_lock = write_lock
        self._known: dict[Key, PlaceName] = {}
        self._waiting: dict[Key, PlaceName] = {}
        self._task: asyncio.Task[None] | None = None
        self._refreshing: asyncio.Task[None] | None = None
        self._refresh_failed: Exception | None = None  # why the last refresh failed: not logged again until it works
        # A write, a forget and a read never interleave: a name taken for a write before its forget is not written
        # after it, and rows read before a forget (or during a write) do not replace the names after it.
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        """Read every stored name (a few rows a channel); raises what the store raised."""
        async with self._lock:
            known = {name.key: name for name in await self._store.place_names()}
            known.update(self._waiting)  # noted while the rows were read: newer than them, and not written yet
            self._known = known

    # -- reading again what other processes changed ----------------------------------------------------------

    async def refresh(self) -> None:
        """Read the stored names again: other processes' new names, renames and forgets replace this copy; what this
        process noted and has not written yet stays. A failure (the database away) keeps the names as they were and
        is logged once, until a read succeeds again; it is never raised."""
        try:
            await self.load()
        except Exception as exc:  # noqa: BLE001 - the names last read stay shown until the database answers
            if self._refresh_failed is None:  # a lost server is logged by the store, once for every part of memory
                log.log(logging.DEBUG if isinstance(exc, DatabaseUnavailableError) else logging.WARNING,
                        "Could not read guild and channel names again (%s: %s); the names read before are shown "
                        "until the database answers", type(exc).__name__, exc)
                self._refresh_failed = exc
            return
        if self._refresh_failed is not None:
            log.log(logging.DEBUG if isinstance(self._refresh_failed, DatabaseUnavailableError) else logging.INFO,
                    "Guild and channel names read again")
        self._refresh_failed = None

    @property
    def refreshing(self) -> bool:
        """Whether the names are read again now and then (a store other processes share)."""
        return self._refreshing is not None and not self._refreshing.done()

    def start_refreshing(self, interval_s: float | None = None) -> None:
        """Read the names again every ``interval_s`` seconds (``REFRESH_INTERVAL_S``) in the background."""
        if not self.refreshing:
            every = REFRESH_INTERVAL_S if interval_s is None else interval_s
            self._refreshing = asyncio.create_task(self._refresh_every(every), name="memory-place-names-refresh")

    async def stop_refreshing(self) -> None:
        if self._refreshing is not None:
            self._refreshing.cancel()
            await asyncio.gather(self._refreshing, return_exceptions=True)
            self._refreshing = None

    async def _refresh_every(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self.refresh()

    # -- noting what was seen ------------------------------------------------------------------------------

    def note_guild(self, guild_id: int, name: str) -> None:
        self._note(PlaceName(guild_id, "guild", guild_id, name))

    def note_channel(self, guild_id: int, channel_id: int, name: str, parent_id: int | None = None) -> None:
        """A channel's name; a thread's with its parent channel's id."""
        self._note(PlaceName(guild_id, "channel", channel_id, name, parent_id))

    def rename_guild(self, guild_id: int, name: str) -> None:
        """A guild renamed on Discord: its name changes if memory holds one (a rename alone records nothing)."""
        if (guild_id, "guild", guild_id) in self._known:
            self.note_guild(guild_id, name)

    def rename_channel(self, guild_id: int, channel_id: int, name: str, parent_id: int | None = None) -> None:
        """A channel or thread renamed on Discord: as ``rename_guild``."""
        if (guild_id, "channel", channel_id) in self._known:
            self.note_channel(guild_id, channel_id, name, parent_id)

    def _note(self, place: PlaceName) -> None:
        current = self._known.get(place.key)
        if current is not None and (current.name, current.parent_id) == (place.name, place.parent_id):
            return
        seen = PlaceName(place.guild_id, place.kind, place.place_id, place.name, place.parent_id, time.time())
        self._known[seen.key] = self._waiting[seen.key] = seen
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._write_in_background(), name="memory-place-names")

    # -- reading ---------------------------------------------------------------------------------------------

    def guild_name(self, guild_id: int) -> str | None:
        place = self._known.get((guild_id, "guild", guild_id))
        return None if place is None else place.name

    def channel_names(self, guild_id: int) -> dict[int, str]:
        """Channel (and thread) id → name, for one guild."""
        return {place.place_id: place.name for place in self._known.values()
                if place.guild_id == guild_id and place.kind == "channel"}

    def channel_parent(self, guild_id: int, channel_id: int) -> int | None:
        place = self._known.get((guild_id, "channel", channel_id))
        return None if place is None else place.parent_id

    # -- writing and forgetting ------------------------------------------------------------------------------

    async def flush(self) -> None:
        """Write what was noted and not written yet; raises what the store raised (the names stay waiting)."""
        await self._write()

    async def settle(self) -> None:
        """Write what waits, as the background write does: a failure (the database away) is logged, not raised; the
        names wait for the next new name, ``flush`` or ``settle``."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self._write_in_background()

    async def forget(self, guild_id: int, channel_id: int | None = None) -> int:
        """Forget a channel's name and its threads' (no channel: every name of the guild), here and in the store;
        returns how many stored names went."""
        def forgotten(place: PlaceName) -> bool:
            if place.guild_id != guild_id:
                return False
            return channel_id is None or (place.kind == "channel" and channel_id in (place.place_id,
                                                                                      place.parent_id))

        async with self._lock:
            _drop(self._known, forgotten)
            _drop(self._waiting, forgotten)
            async with self._write_lock:
                return await self._store.forget_place_names(guild_id, channel_id)

    async def _write(self) -> None:
        async with self._lock:
            batch = list(self._waiting.values())
            if not batch:
                return
            self._waiting.clear()
            try:
                async with self._write_lock:
                    await self._store.write_place_names(batch)
            except BaseException:
                for place in batch:  # a name noted since is newer: it stays
                    self._waiting.setdefault(place.key, place)
                raise

    async def _write_in_background(self) -> None:
        try:
            await self._write()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the names wait for the next new name, flush or close
            log.log(logging.DEBUG if isinstance(exc, DatabaseUnavailableError) else logging.WARNING,
                    "Could not store %d guild or channel name(s) now (%s: %s); they are written with the next new "
                    "name, or as memory closes", len(self._waiting), type(exc).__name__, exc)


def _drop(places: dict[Key, PlaceName], forgotten: Callable[[PlaceName], bool]) -> None:
    for key in [key for key, place in places.items() if forgotten(place)]:
        del places[key]
