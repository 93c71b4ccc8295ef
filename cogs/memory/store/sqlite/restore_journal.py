"""The restore journal: what a restore is doing, on disk before anything moves, so that a restore cut short at any
point is finished or undone as memory next opens, never left as an empty or missing database.

``<database>.restore.json`` names the step reached. ``copying`` (the backup is being copied to ``.restoring``, the
erasures it lacks written into that copy, the live database made one file): nothing live has moved yet, so a restore
cut short there is undone. ``swapping`` (the copy is complete and checked): from here on it is finished, once the
copy passes its check again: the live database is renamed aside, the copy renamed into its place (``swapped``), the
vector index files removed, the replaced database moved out of the data folder (or deleted), and the journal
removed last. Every step can run again, so a restore cut short while finishing is finished by the next open.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from ...vectors.files import why
from .lock import DatabaseInUse, DatabaseLock
from .snapshot import BackupError, check_backup, remove, sync_folder

__all__ = ("KILL_ENV", "KILL_POINTS", "RestoreJournal", "Finished", "finish", "journal_path", "reached",
           "recover_locked", "recover_restore", "undo", "write_journal")

log = logging.getLogger(__name__)

JOURNAL_SUFFIX = ".restore.json"
INCOMING_SUFFIX = ".restoring"
# Test-only: with MEMORY_RESTORE_KILL_AT=<point> the process ends at that point as a kill -9 would (os._exit: no
# cleanup, no unwinding), so a test can open memory afterwards (tests/cogs/memory/store/sqlite/test_restore_kills.py).
KILL_ENV = "MEMORY_RESTORE_KILL_AT"
KILLED_STATUS = 99
KILL_POINTS = ("journal-written", "copying", "copied", "held", "moved-aside", "swapped", "indexes-removed", "kept",
               "cleared")
# An opener waits out a restore (or another opener finishing one) this many times before it gives up.
_ATTEMPTS = 3


def reached(point: str) -> None:
    """A kill point (``KILL_POINTS``): ends the process here when a test asks for it."""
    if os.environ.get(KILL_ENV) == point:
        os._exit(KILLED_STATUS)


def journal_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + JOURNAL_SUFFIX)


def incoming_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + INCOMING_SUFFIX)


@dataclass(frozen=True, slots=True)
class RestoreJournal:
    """One restore in progress. Paths in the data folder are kept as names, so a moved folder still recovers."""

    step: str  # "copying", "swapping" or "swapped"
    source: Path
    index_dir: Path
    # The name the live database is renamed to beside itself; None when there was none to replace.
    replaced_name: str | None
    # Where the replaced database is kept in the end; None when it is deleted (or there was none).
    kept: Path | None
    messages: int = 0

    def at(self, step: str, messages: int | None = None) -> RestoreJournal:
        return replace(self, step=step, messages=self.messages if messages is None else messages)

    def to_json(self) -> str:
        return json.dumps({"v": 1, "step": self.step, "source": str(self.source), "index_dir": str(self.index_dir),
                           "replaced": self.replaced_name, "kept": None if self.kept is None else str(self.kept),
                           "messages": self.messages})

    @classmethod
    def from_json(cls, text: str) -> RestoreJournal:
        """ValueError (or KeyError, TypeError) for anything but a whole journal."""
        data = json.loads(text)
        if data["step"] not in ("copying", "swapping", "swapped"):
            raise ValueError(f"unknown step {data['step']!r}")
        return cls(data["step"], Path(data["source"]), Path(data["index_dir"]),
                   None if data["replaced"] is None else str(data["replaced"]),
                   None if data["kept"] is None else Path(data["kept"]), int(data["messages"]))


@dataclass(frozen=True, slots=True)
class Finished:
    """How a restore ended: where the replaced database went, and why it is still in the data folder if it is."""

    kept: Path | None
    left_behind: str | None = None


def write_journal(db_path: Path, journal: RestoreJournal) -> None:
    """Replace the journal in one rename, on disk (the file and its folder entry) before this returns."""
    path = journal_path(db_path)
    partial = path.with_name(path.name + ".tmp")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(descriptor, journal.to_json().encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(partial, path)
    sync_folder(path)


def _clear_journal(db_path: Path) -> None:
    path = journal_path(db_path)
    remove(path)
    remove(path.with_name(path.name + ".tmp"))
    sync_folder(path)


def _remove_incoming(db_path: Path) -> None:
    incoming = incoming_path(db_path)
    for path in (incoming, incoming.with_name(incoming.name + ".part"), incoming.with_name(incoming.name + "-journal"),
                 incoming.with_name(incoming.name + ".part-journal")):
        remove(path)


def _remove_indexes(index_dir: Path) -> None:
    """The vector index files describe the replaced database: remove them, so the next start rebuilds them.

    One left behind is still caught on start (its fingerprint no longer matches the database), so a failure here
    is only logged.
    """
    if not index_dir.is_dir():
        return
    for path in index_dir.iterdir():
        if path.name.endswith((".faiss", ".faiss.tmp")) and path.is_file():
            try:
                path.unlink()
            except OSError as error:
                log.warning("Could not remove the vector index %s: %s", path, why(error))


def _move_out(replaced: Path, kept: Path) -> None:
    """Move the replaced database to ``kept`` (0600, in a 0700 folder): one rename on the same file system, else a
    copy through ``kept.part``, flushed, renamed, then the original removed."""
    os.chmod(replaced, 0o600)
    kept.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        os.replace(replaced, kept)
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
        partial = kept.with_name(kept.name + ".part")
        try:
            with open(replaced, "rb") as source, open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                                                       "wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
                target.flush()
                os.fsync(target.fileno())
            os.replace(partial, kept)
        except BaseException:
            remove(partial)
            raise
        sync_folder(kept)
        replaced.unlink()
    sync_folder(kept)
    sync_folder(replaced)


def _put_away(db_path: Path, journal: RestoreJournal) -> Finished:
    """The replaced database out of the data folder: moved to ``kept``, or deleted. A failure is said, not raised:
    the journal stays, and the next open tries again."""
    if journal.replaced_name is None:
        return Finished(None)
    replaced = db_path.with_name(journal.replaced_name)
    if not replaced.exists():  # already moved (or deleted)
        return Finished(journal.kept)
    try:
        if journal.kept is None:
            replaced.unlink()
            sync_folder(replaced)
            return Finished(None)
        _move_out(replaced, journal.kept)
    except OSError as error:
        where = "delete it" if journal.kept is None else f"move it to {journal.kept}"
        return Finished(replaced, f"could not {where}: {why(error)}")
    return Finished(journal.kept)


def undo(db_path: Path, journal: RestoreJournal | None) -> None:
    """Put the database the restore would have replaced back (if it was renamed aside), and leave no copy."""
    if journal is not None and journal.replaced_name is not None and not db_path.exists():
        replaced = db_path.with_name(journal.replaced_name)
        if not replaced.exists():
            raise BackupError(f"a restore into {db_path} was cut short and the database it was replacing is gone "
                              f"(not at {replaced}); restore a backup")
        os.replace(replaced, db_path)
        sync_folder(db_path)
    _remove_incoming(db_path)
    _clear_journal(db_path)


def _swapped(db_path: Path, journal: RestoreJournal) -> bool:
    """Whether the restored copy already has the live name (the copy gone, what it replaced renamed aside)."""
    if incoming_path(db_path).exists() or not db_path.exists():
        return False
    return (journal.step == "swapped" or journal.replaced_name is None
            or db_path.with_name(journal.replaced_name).exists()
            or (journal.kept is not None and journal.kept.exists()))


def finish(db_path: Path, journal: RestoreJournal) -> Finished:
    """The steps after the point of no return, each done only if not done yet: rename the live database aside, the
    copy into its place, remove the vector index files, put the replaced database away, remove the journal."""
    if not _swapped(db_path, journal):
        incoming = incoming_path(db_path)
        replaced = None if journal.replaced_name is None else db_path.with_name(journal.replaced_name)
        if replaced is not None and db_path.exists() and not replaced.exists():
            os.replace(db_path, replaced)
            sync_folder(db_path)
            reached("moved-aside")
        os.replace(incoming, db_path)
        sync_folder(db_path)
        journal = journal.at("swapped")
        write_journal(db_path, journal)
        reached("swapped")
    _remove_indexes(journal.index_dir)
    reached("indexes-removed")
    finished = _put_away(db_path, journal)
    if finished.left_behind is not None:
        return finished
    reached("kept")
    _clear_journal(db_path)
    reached("cleared")
    return finished


def _finished_line(db_path: Path, journal: RestoreJournal, finished: Finished) -> str:
    if finished.left_behind is not None:
        where = (f"the database it replaced is still in the data folder as {finished.kept} ({finished.left_behind}; "
                 "the next start tries again)")
    elif journal.replaced_name is None:
        where = "there was no database to replace"
    elif finished.kept is None:
        where = "the database it replaced was deleted"
    else:
        where = f"the database it replaced is kept as {finished.kept}"
    return (f"A restore of {journal.source} into {db_path} was cut short after its point of no return: finished it; "
            f"memory is the restored backup ({journal.messages} messages); {where}")


def recover_locked(db_path: Path) -> str | None:
    """Finish or undo a restore cut short (the caller holds the database alone); returns the one line that says
    which, or None when there was none. Raises BackupError when neither the old database nor the copy is left."""
    path = journal_path(db_path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        journal: RestoreJournal | None = RestoreJournal.from_json(text)
    except (ValueError, KeyError, TypeError):
        journal = None
    if journal is None:
        if not db_path.exists():  # which file is which cannot be told: never open an empty database instead
            raise BackupError(f"the restore journal {path} is unreadable and {db_path} is missing: rename the database "
                              f"from before the restore ({db_path.name}.replaced-*) or the restored copy "
                              f"({incoming_path(db_path).name}) to {db_path.name}, delete the journal, and start again")
        undo(db_path, None)
        return _undone_line("a backup", db_path, "before it replaced anything")
    if journal.step == "copying":
        undo(db_path, journal)
        return _undone_line(journal.source, db_path, "before it replaced anything")
    if not _swapped(db_path, journal):
        problem = _incoming_problem(db_path)
        if problem is not None:
            undo(db_path, journal)
            return _undone_line(journal.source, db_path, f"and its copy {problem}")
    return _finished_line(db_path, journal, finish(db_path, journal))


def _undone_line(source: Path | str, db_path: Path, when: str) -> str:
    return (f"A restore of {source} into {db_path} was cut short {when}: rolled back; memory is the database it was "
            "before the restore (run the restore again)")


def _incoming_problem(db_path: Path) -> str | None:
    """Why the copy cannot be put in place (gone, or failing its check again), or None."""
    incoming = incoming_path(db_path)
    if not incoming.exists():
        return "is gone"
    try:
        check_backup(incoming)
    except BackupError as error:
        return f"failed its check ({error})"
    return None


def recover_restore(db_path: Path) -> str | None:
    """As memory opens (or a command reads the file): finish or undo a restore cut short, with the database alone;
    returns the one line saying which, or None (the usual case: one stat of the journal's name)."""
    journal = journal_path(db_path)
    for _ in range(_ATTEMPTS):
        if not journal.exists():
            return None
        lock = DatabaseLock(db_path)
        try:
            lock.exclusive()
        except DatabaseInUse:
            # A restore runs (or another process is finishing one): wait until it lets go, then look again.
            lock.shared()
            lock.release()
            continue
        try:
            return recover_locked(db_path)
        finally:
            lock.release()
    raise BackupError(f"a restore of {db_path} is unfinished ({journal}) and another process keeps the database "
                      "open; stop it, then start again")
