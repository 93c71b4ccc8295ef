"""Who has the memory database open: every opener holds a shared lock, and a restore needs it alone."""

from __future__ import annotations

import logging
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows has no flock: a restore cannot tell, and the README says to stop the bot first
    fcntl = None  # type: ignore[assignment]

__all__ = ("DatabaseInUse", "DatabaseLock")

log = logging.getLogger(__name__)


class DatabaseInUse(RuntimeError):
    """Another process (the bot, another ``python -m cogs.memory``) has the database open."""


class DatabaseLock:
    """An flock on ``<database>.lock``, which the OS releases when its process ends, however it ends.

    A lock file that cannot be made (a read-only or full disk) is skipped: the lock only guards restores, and must
    never keep memory from opening.
    """

    def __init__(self, db_path: Path) -> None:
        self.path = db_path.with_name(db_path.name + ".lock")
        self._fd: int | None = None

    def shared(self) -> bool:
        """Mark the database in use by this process; waits only while a restore replaces it (blocking).

        Returns whether this process is the only one using it (False when that cannot be told).
        """
        if fcntl is None:
            return False
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            log.debug("No lock file %s (%s): a restore cannot tell that this process uses the database",
                      self.path, error)
            return False
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            alone = False
        else:
            alone = True
        fcntl.flock(self._fd, fcntl.LOCK_SH)  # from exclusive: shared at once; otherwise after a restore is done
        return alone

    def exclusive(self) -> None:
        """Hold the database alone, or raise DatabaseInUse at once."""
        if fcntl is None:
            return
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.release()
            raise DatabaseInUse(str(self.path)) from None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops its flock
            self._fd = None
