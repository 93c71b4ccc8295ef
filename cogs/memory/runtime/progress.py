"""Progress of a long terminal command (import, migrate, a benchmark's loop): a tqdm bar where stderr is a terminal,
plain dated lines where it is not (a log file, a pipe, systemd), so neither ever fills with carriage returns."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TextIO, TypeVar

from tqdm import tqdm

__all__ = ("TerminalProgress", "follow")

T = TypeVar("T")

# Away from a terminal, a line each time another tenth is done, and at least this often while something moves.
PLAIN_EVERY_SECONDS = 30.0
PLAIN_LINES = 10  # a line each tenth
# How often ``follow`` reads how much is done while the work runs.
FOLLOW_EVERY_SECONDS = 0.5


def _duration(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60:02d}:{rest % 60:02d}"


class TerminalProgress:
    """How far ``total`` items (of ``unit``) have got, told ``update(done)`` with the count actually done so far.

    On a terminal it is a tqdm bar with the rate and an ETA; elsewhere a plain line such as
    ``import #general: 400/2292 (17%), 310 msg/s, about 00:06 left`` every tenth, every 30 s of progress, and once at
    ``close``, which also ends the bar's line so that what is printed next starts on a line of its own.
    """

    def __init__(self, label: str, total: int, out: TextIO, *, unit: str = "msg",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total, self.unit = label, total, unit
        self._out, self._clock = out, clock
        self._started = self._last_line = clock()
        self._done = self._last_done = 0
        self._next_step = 1  # the next line is due at this many PLAIN_LINES-ths of total
        self._note = ""
        self._bar: tqdm | None = None
        if _is_terminal(out):
            self._bar = tqdm(total=total, desc=label, unit=f" {unit}", file=out, mininterval=0.5, dynamic_ncols=True)

    @property
    def done(self) -> int:
        return self._done

    def update(self, done: int, note: str = "") -> None:
        """``done`` items are done now (a count, not an increment; it never goes back); ``note`` is shown beside it
        ("12 already there")."""
        done = max(done, self._done)
        if note != self._note and self._bar is not None:
            self._bar.set_postfix_str(note, refresh=False)
        self._note = note
        if self._bar is not None:
            self._bar.update(done - self._done)
            self._done = done
            return
        self._done = done
        now = self._clock()
        if done > self._last_done and (done * PLAIN_LINES >= self._next_step * self.total
                                       or now - self._last_line >= PLAIN_EVERY_SECONDS):
            self._line(now)

    def close(self) -> None:
        """The last word: the bar's final state, or a final plain line (unless the last line said it already)."""
        if self._bar is not None:
            self._bar.close()
        elif self._done != self._last_done or self._done == 0:
            self._line(self._clock())

    def _line(self, now: float) -> None:
        elapsed = now - self._started
        rate = self._done / elapsed if elapsed > 0 else 0.0
        text = f"{self.label}: {self._done}/{self.total}"
        if self.total:
            text += f" ({100 * self._done // self.total}%)"
        if self._note:
            text += f", {self._note}"
        if self._done >= self.total:
            text += f", {rate:.0f} {self.unit}/s, done in {_duration(elapsed)}"
        elif rate > 0:
            text += f", {rate:.0f} {self.unit}/s, about {_duration((self.total - self._done) / rate)} left"
        print(text, file=self._out, flush=True)
        self._last_line, self._last_done = now, self._done
        while self._next_step <= PLAIN_LINES and self._next_step * self.total <= self._done * PLAIN_LINES:
            self._next_step += 1


async def follow(progress: TerminalProgress, work: Awaitable[T], done: Callable[[], int],
                 every: float = FOLLOW_EVERY_SECONDS) -> T:
    """Awaits ``work`` while ``progress`` shows ``done()``, what is really done so far (messages stored, not handed
    to a queue), read every ``every`` seconds and once at the end; returns what ``work`` returns."""
    task = asyncio.ensure_future(work)
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=every)
            progress.update(done())
        return task.result()
    finally:
        task.cancel()  # only when this wait was cancelled; done otherwise


def _is_terminal(out: TextIO) -> bool:
    isatty = getattr(out, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False
