"""What a flush tells its caller (what was stored, what was not and why), the error it raises when something was
not stored, and how ingest retries a failing database or model."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("FlushReport", "IngestError", "RetryPolicy")


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
        return min(self.max_delay_s, self.first_delay_s * 2 ** max(failures - 1, 0))


@dataclass(frozen=True, slots=True)
class FlushReport:
    """What became of the messages added since the previous flush (by any caller) returned.

    ``stored``: written to SQLite and FTS5 now (keyword-searchable). ``skipped``: already stored, deleted before
    they were stored, or with nothing to remember. ``rejected``: message ids that can never be stored (their
    data, logged one by one). ``not_stored``: message ids whose write failed (``error`` says why); memory keeps
    them and tries again, and a later flush reports them until they are stored. ``vectors_pending``: stored
    messages whose vector is still to come (the embedding model is failing; they are retried, across restarts
    too). ``vectors_rejected``: message ids the model could not embed; they stay keyword-searchable.
    """

    stored: int = 0
    skipped: int = 0
    rejected: tuple[int, ...] = ()
    not_stored: tuple[int, ...] = ()
    error: str | None = None
    vectors_pending: int = 0
    vectors_rejected: tuple[int, ...] = ()

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
