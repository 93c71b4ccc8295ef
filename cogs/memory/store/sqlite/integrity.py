"""Whether the memory database can be used: checked as it opens (a time-bounded quick_check), its keyword index
rebuilt from the messages table when damaged, and every reason it cannot open said with what to do about it."""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ...runtime.private_files import create_private_file, make_private_folder
from ...vectors.files import disk_nearly_full, why
from ...language.keywords import fts_document
from ..protocol import StoreOpenError

__all__ = ("FTS_CHECK_BUDGET_S", "QUICK_CHECK_BUDGET_S", "CheckResult", "KeywordRows", "StoreOpenError",
           "check_before_open", "check_fts", "compare_fts_rows", "explain_open_failure", "make_room_for", "quick_check",
           "rebuild_fts", "repair_fts")

log = logging.getLogger(__name__)

# Each check stops after this long, so a big database never holds up a start for minutes. On the project's 2-core
# box (warm cache) quick_check reads ~400 MB/s and the FTS check ~60k messages/s: 5 s covers about 2 GB and 300k
# messages. A bigger database is checked in part on each start; `python -m cogs.memory check` checks all of it.
QUICK_CHECK_BUDGET_S = 5.0
FTS_CHECK_BUDGET_S = 5.0
# quick_check lists at most this many problems; one is enough to refuse the database.
_MAX_PROBLEMS = 20
_REBUILD_PAGE = 2_000

QUICK_CHECK = f"PRAGMA quick_check({_MAX_PROBLEMS})"
FTS_INTEGRITY_CHECK = "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 0)"
SELECT_FTS_SQL = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages_fts'"
DROP_FTS = "DROP TABLE messages_fts"
SELECT_FTS_SOURCE = "SELECT id, content, author_name FROM messages WHERE id > ? ORDER BY id LIMIT ?"
INSERT_FTS = "INSERT INTO messages_fts (rowid, body, author) VALUES (?, ?, ?)"
# Every message has one keyword row under its own row id (write.py writes both in one transaction). FTS5's
# integrity-check compares the index with the rows the FTS table holds, not with the messages: a row deleted from the
# FTS table (or never written) passes it, and its message cannot be found by its words.
COUNT_MESSAGES = "SELECT COUNT(*) FROM messages"
COUNT_WITHOUT_KEYWORDS = """
SELECT COUNT(*) FROM messages AS m WHERE NOT EXISTS (SELECT 1 FROM messages_fts AS f WHERE f.rowid = m.id)
"""
COUNT_KEYWORDS_WITHOUT_MESSAGE = """
SELECT COUNT(*) FROM messages_fts AS f WHERE NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.id = f.rowid)
"""

RESTORE_ADVICE = ("Stop the bot and restore a backup: python -m cogs.memory restore BACKUP.sqlite3 (README, "
                  "\"Backups\"). With no backup, `sqlite3 {path} .recover | sqlite3 recovered.sqlite3` saves what "
                  "is still readable.")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """What a check found: no ``problems`` is healthy; ``complete`` False means it stopped at its time limit."""

    problems: tuple[str, ...]
    complete: bool

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class KeywordRows:
    """The keyword index's rows against the messages: ``missing`` messages have no keyword row (their words find
    nothing), ``extra`` keyword rows belong to no message."""

    messages: int
    missing: int
    extra: int

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra

    def describe(self) -> str:
        return f"lacks {self.missing} of the {self.messages} messages and has {self.extra} row(s) of no message"


class _Deadline:
    """Interrupts the statement running on ``connection`` once ``seconds`` have passed (``None``: never)."""

    def __init__(self, connection: sqlite3.Connection, seconds: float | None) -> None:
        self._timer = threading.Timer(seconds, connection.interrupt) if seconds is not None else None

    def __enter__(self) -> None:
        if self._timer is not None:
            self._timer.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._timer is not None:
            self._timer.cancel()


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA busy_timeout = 5000")
    return connection


def _code(error: sqlite3.Error) -> int:
    """SQLite's primary result code (SQLITE_FULL, SQLITE_CORRUPT...) of ``error``."""
    return (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF


def quick_check(path: Path, budget_s: float | None = QUICK_CHECK_BUDGET_S) -> CheckResult:
    """SQLite's ``PRAGMA quick_check`` (every page and b-tree, not index contents), stopped after ``budget_s``."""
    connection = _connect(path)
    try:
        with _Deadline(connection, budget_s):
            rows = connection.execute(QUICK_CHECK).fetchall()
    except sqlite3.OperationalError as error:
        if _code(error) != sqlite3.SQLITE_INTERRUPT:
            raise
        return CheckResult((), complete=False)
    finally:
        connection.close()
    lines = [line for row in rows for line in row[0].splitlines()]
    return CheckResult(tuple(line for line in lines if line not in ("ok", "*** in database main ***")), True)


def check_fts(path: Path, budget_s: float | None = FTS_CHECK_BUDGET_S) -> CheckResult:
    """FTS5's integrity-check: the keyword index agrees with the text it indexes (needs a writable database)."""
    connection = _connect(path)
    try:
        with _Deadline(connection, budget_s):
            connection.execute(FTS_INTEGRITY_CHECK)
    except sqlite3.DatabaseError as error:
        if _code(error) == sqlite3.SQLITE_CORRUPT:
            return CheckResult((str(error),), complete=True)
        # Interrupted at its time limit, or another process held the write lock all through the busy timeout.
        log.info("The keyword index check of %s did not finish: %s", path, error)
        return CheckResult((), complete=False)
    finally:
        connection.close()
    return CheckResult((), complete=True)


def compare_fts_rows(path: Path) -> KeywordRows:
    """Count the messages without a keyword row and the keyword rows without a message, in one read transaction
    (a consistent snapshot while memory writes: it holds no write lock)."""
    connection = _connect(path)
    try:
        connection.execute("BEGIN")
        try:
            return KeywordRows(connection.execute(COUNT_MESSAGES).fetchone()[0],
                               connection.execute(COUNT_WITHOUT_KEYWORDS).fetchone()[0],
                               connection.execute(COUNT_KEYWORDS_WITHOUT_MESSAGE).fetchone()[0])
        finally:
            connection.rollback()
    finally:
        connection.close()


def rebuild_fts(path: Path) -> int:
    """Rebuild the keyword index from the messages table in one transaction; returns how many messages it indexed.

    The damaged table is dropped, never read, and made again from its own stored definition.
    """
    connection = _connect(path)
    try:
        create = connection.execute(SELECT_FTS_SQL).fetchone()[0]
        connection.execute("BEGIN IMMEDIATE")
        try:
            connection.execute(DROP_FTS)
            connection.execute(create)
            count, after = 0, 0
            while rows := connection.execute(SELECT_FTS_SOURCE, (after, _REBUILD_PAGE)).fetchall():
                connection.executemany(INSERT_FTS, [(rowid, fts_document(content), author)
                                                    for rowid, content, author in rows])
                count += len(rows)
                after = rows[-1][0]
        except BaseException:
            connection.rollback()
            raise
        connection.commit()
        return count
    finally:
        connection.close()


def repair_fts(path: Path) -> None:
    """Check the keyword index (time-bounded) and rebuild it if it is damaged; a failed rebuild is logged."""
    result = check_fts(path)
    if result.ok:
        return
    log.warning("The keyword index of %s is damaged (%s); rebuilding it from the messages table",
                path, result.problems[0])
    try:
        count = rebuild_fts(path)
    except sqlite3.Error as error:
        log.error("Rebuilding the keyword index of %s failed (%s); keyword search may fail until it is rebuilt "
                  "on a later start", path, error)
        return
    log.info("Keyword index of %s rebuilt: %d messages", path, count)


def make_room_for(path: Path) -> None:
    """Make the database's folder (0700 if new) and a new database's file (0600, which SQLite's -wal, -shm and
    -journal files take after); StoreOpenError if a file or folder is in the way."""
    if path.is_dir():
        raise StoreOpenError(f"{path} is a folder, not a database file; move it away or pass another --db")
    try:
        make_private_folder(path.parent)
    except OSError as error:
        raise StoreOpenError(f"cannot make the folder of {path}: {why(error)}") from None
    if not path.exists():
        try:
            create_private_file(path)
        except OSError as error:
            raise StoreOpenError(f"cannot create {path}: {why(error)}") from None


def check_before_open(path: Path) -> None:
    """Refuse a database that is damaged (quick_check, bounded in time); raises StoreOpenError."""
    if not path.is_file() or path.stat().st_size == 0:
        return  # a new database
    result = quick_check(path)
    if not result.complete:
        log.info("quick_check of %s stopped after %.0f s; the rest is checked by `python -m cogs.memory check`",
                 path, QUICK_CHECK_BUDGET_S)
    if not result.ok:
        raise StoreOpenError(f"the memory database {path} is damaged ({result.problems[0]}; "
                             f"{len(result.problems)} problem(s) found). " + RESTORE_ADVICE.format(path=path))


def explain_open_failure(path: Path, error: sqlite3.Error | OSError) -> str:
    """Why the database at ``path`` could not be opened, and what to do, in one line."""
    if isinstance(error, OSError):
        return f"cannot open {path}: {why(error)}"
    code = _code(error)
    if code == sqlite3.SQLITE_FULL or (code == sqlite3.SQLITE_IOERR and disk_nearly_full(path)):
        return f"the disk holding {path} is full; free some space and start again (what is stored is kept)"
    if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
        return f"the memory database {path} is damaged ({error}). " + RESTORE_ADVICE.format(path=path)
    if code == sqlite3.SQLITE_BUSY:
        return f"{path} is locked by another process ({error}); try again once it is done"
    return f"cannot use {path}: {error}"
