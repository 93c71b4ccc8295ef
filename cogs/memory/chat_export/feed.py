"""Reads one export on a thread of its own and hands its batches to the event loop a few at a time: the loop never
parses, and memory holds the batches handed over and not taken yet, never the file."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import TracebackType

from .reader import ExportBatch, ExportedChannel, ReadStopped, open_export

__all__ = ("ExportFeed",)

# Batches read ahead of the import; the reader waits while this many are handed over and not taken.
READ_AHEAD = 2


class _End:
    """The reader thread is done (at the file's end, stopped, or after an error it handed over)."""


_END = _End()
_Item = ExportedChannel | ExportBatch | BaseException | _End


class ExportFeed:
    """``async with ExportFeed(path, size) as feed``: the file checked (an ExportError or ``ReadStopped`` raised
    there), ``feed.channel`` from its header, then ``await feed.next()`` for each batch of ``size`` messages until
    None. ``stop`` (set, say, by Ctrl-C) or ``feed.stop()`` stops the reading within one read of the file; leaving
    the ``async with`` stops it too and waits for the thread."""

    def __init__(self, path: Path, size: int, stop: asyncio.Event | None = None) -> None:
        self.path = path
        self._size = size
        self._stop = stop
        self._stopping = threading.Event()
        self._slots = threading.Semaphore(READ_AHEAD)
        self._items: asyncio.Queue[_Item] = asyncio.Queue()  # bounded by the slots (and the one end)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._watch: asyncio.Task[bool] | None = None
        self._ended = False
        self._channel: ExportedChannel | None = None

    async def __aenter__(self) -> ExportFeed:
        self._loop = asyncio.get_running_loop()
        if self._stop is not None:
            self._watch = asyncio.create_task(self._stop.wait())
            self._watch.add_done_callback(lambda _: self.stop())
        self._thread = threading.Thread(target=self._read, name="export-reader", daemon=True)
        self._thread.start()
        try:
            first = await self._take()
            if isinstance(first, BaseException):
                raise first
            if not isinstance(first, ExportedChannel):  # the end: stopped while it was checked
                raise ReadStopped
            self._channel = first
        except BaseException:
            await self._finish()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self._finish()

    @property
    def channel(self) -> ExportedChannel:
        """The export's channel, from its header (read as the file was checked)."""
        if self._channel is None:
            raise RuntimeError("the feed is not open")
        return self._channel

    def stop(self) -> None:
        """Stop reading (from any thread): the batches already handed over are still there to take."""
        self._stopping.set()
        self._slots.release()  # the reader may be waiting for a slot: it wakes, sees the stop, and ends

    async def next(self) -> ExportBatch | None:
        """The next batch, or None at the file's end or once stopped; raises the reader's ExportError."""
        item = await self._take()
        if isinstance(item, BaseException):
            raise item
        return item if isinstance(item, ExportBatch) else None

    async def _take(self) -> _Item:
        if self._ended:
            return _END
        item = await self._items.get()
        if isinstance(item, _End):
            self._ended = True
        elif not isinstance(item, BaseException):  # it held a slot
            self._slots.release()
        return item

    async def _finish(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self.stop()
        while not self._ended:  # what the reader still hands over until it sees the stop
            await self._take()
        if self._thread is not None:
            self._thread.join()  # it has handed over its end: it is returning

    # -- the reader thread ----------------------------------------------------------------------------------

    def _read(self) -> None:
        try:
            with open_export(self.path, self._stopping) as export:
                if not self._hand_over(export.channel):
                    return
                for batch in export.batches(self._size):
                    if not self._hand_over(batch):
                        return
        except ReadStopped:
            pass
        except BaseException as error:  # noqa: BLE001 - raised on the loop, where the import reports it
            self._send(error)
        finally:
            self._send(_END)

    def _hand_over(self, item: ExportedChannel | ExportBatch) -> bool:
        """Waits for a free slot and hands ``item`` over; False once stopped."""
        if self._stopping.is_set():
            return False
        self._slots.acquire()
        if self._stopping.is_set():
            return False
        self._send(item)
        return True

    def _send(self, item: _Item) -> None:
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._items.put_nowait, item)
