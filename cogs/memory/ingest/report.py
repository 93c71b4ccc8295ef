"""What a flush tells its caller (what was stored, what was not and why), the error it raises when something was
not stored, and how ingest retries a failing database or model."""

from __future__ import annotations

import errno
import sqlite3
from dataclasses import dataclass

from ..store.protocol import DatabaseUnavailableError

__all__ = ("FlushReport", "IngestError", "RetryPolicy", "describe")

# SQLite's primary result codes for the failures an admin can fix, in words.
_SQLITE_REASONS = {sqlite3.SQLITE_BUSY: "another process holds the database's write lock",
                   sqlite3.SQLITE_LOCKED: "another connection holds the database's write lock",
                   sqlite3.SQLITE_FULL: "the disk is full"}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long ingest waits between tries: doubling from ``first_delay_s`` up to ``max_delay_s``.

    A failed write is tried ``write_attempts`` times in a row (on top of SQLite's busy timeout) before a flush
    reports it; it is then tried again in the background with the same growing pauses, as is a failing model.
    """

    write_attempts: int = 3
    first_delay_s: float = 0.25
    max_delay_s: float = 60.0

    def delay(self, failures: int) -> float:
        """The pause after ``failures`` failures in a row."""
        return min(self.max_delay_s, self.first_delay_s * 2.0 ** max(failures - 1, 0))


@dataclass(frozen=True, slots=True)
class FlushReport:
    """What became of the messages added since the previous flush (by any caller) returned.

    ``stored``: written to SQLite and FTS5 now (keyword-searchable). ``skipped``: already stored, deleted before
    they were stored, or with nothing to remember. ``rejected``: message ids that can never be stored (their
    data, logged one by one). ``not_stored``: message ids whose write failed (``error`` says why); memory keeps
    them and tries again, and a later flush reports them until they are stored. ``vectors_pending``: stored
    messages whose vector is still to come (the model or the vectors' write is failing, ``vectors_error`` says how;
    they are retried, across restarts too). ``vectors_rejected``: message ids the model could not embed; they stay
    keyword-searchable.
    """

    stored: int = 0
    skipped: int = 0
    rejected: tuple[int, ...] = ()
    not_stored: tuple[int, ...] = ()
    error: str | None = None
    vectors_pending: int = 0
    vectors_rejected: tuple[int, ...] = ()
    vectors_error: str | None = None

    @property
    def complete(self) -> bool:
        """Whether every message added before the flush is stored (or was skipped on purpose)."""
        return not (self.rejected or self.not_stored)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


class IngestError(RuntimeError):
    """A flush found messages that were not stored; ``report`` says which and what was stored."""

    def __init__(self, report: FlushReport) -> None:
        self.report = report
        parts = []
        if report.not_stored:
            parts.append(f"{_count(len(report.not_stored), 'message')} not stored yet ({report.error}); "
                         "memory keeps them and tries again")
        if report.rejected:
            parts.append(f"{_count(len(report.rejected), 'message')} rejected as unstorable (see the log)")
        super().__init__("; ".join(parts))


def describe(error: BaseException) -> str:
    """Why a write or the model failed, in words: what happened to the database when that is known (a lock, a full
    disk, a lost server), else the error itself."""
    if isinstance(error, DatabaseUnavailableError):  # already in words, with what to do
        return str(error)
    code = getattr(error, "sqlite_errorcode", None)
    reason = _SQLITE_REASONS.get(code & 0xFF) if isinstance(code, int) else None
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        reason = "the disk is full"
    return reason or f"{type(error).__name__}: {error}"
