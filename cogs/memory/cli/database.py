"""The SQLite file itself: ``backup``, ``restore``, ``check`` (no profile, no models), and ``reapply-erasures``."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..privacy.known import erasures_for_restore
from ..privacy.ledger import LEDGER_NAME
from ..store.sqlite.backup import BackupError, backup_database, restore_database
from ..runtime.export_child import exporting_into
from ..runtime.export_manifest import export_problem
from ..store.sqlite.integrity import (RESTORE_ADVICE, KeywordRows, check_fts, compare_fts_rows, explain_open_failure,
                                      quick_check, rebuild_fts)
from ..store.sqlite.lock import DatabaseLock
from ..store.sqlite.restore_journal import recover_restore
from ..vectors.files import why
from .options import FAILED, OK, USAGE, Terminal, print_backlog

if TYPE_CHECKING:
    from ..memory import Memory

PENDING_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pending_vectors'"
# The ONNX exports live beside the database (Memory.open): ``data/onnx/``.
ONNX_FOLDER = "onnx"
REPAIR_HINT = "run `python -m cogs.memory check --repair` with memory stopped"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    backup = commands.add_parser("backup", parents=[parent], help="copy the database to DEST, safely while the bot runs",
                                 description="Copy the SQLite database with SQLite's online backup API.")
    # Kept as typed: Path would drop the trailing "/" that says DEST is a folder.
    backup.add_argument("destination", metavar="DEST",
                        help="a folder (an existing one, or a path ending in /) for a dated copy, or a new file")
    backup.set_defaults(handler=sqlite_file(run_backup), memory=None)
    restore = commands.add_parser("restore", parents=[parent],
                                  help="replace the database with a backup (stop the bot first)",
                                  description="Replace the database with a checked backup. What was erased since the "
                                              "backup stays erased; the database it replaces is moved out of the data "
                                              "folder (into backups/ beside it, unless told otherwise).")
    restore.add_argument("source", type=Path, metavar="BACKUP.sqlite3")
    replaced = restore.add_mutually_exclusive_group()
    replaced.add_argument("--keep-replaced", type=Path, metavar="DIR",
                          help="keep the replaced database in DIR, outside the data folder (default: backups/ beside "
                               "the data folder)")
    replaced.add_argument("--discard-replaced", action="store_true", help="delete the replaced database")
    restore.set_defaults(handler=sqlite_file(run_restore), memory=None)
    check = commands.add_parser("check", parents=[parent],
                                help="check the whole database and the ONNX exports for damage; rebuild a damaged "
                                     "keyword index",
                                description="Check the whole database (its keyword index only while memory is "
                                            "stopped) and hash the ONNX exports beside it whole; exit 1 on damage "
                                            "left unrepaired.")
    check.add_argument("--repair", action="store_true",
                       help="rebuild a keyword index that lacks messages (or holds gone ones) from the messages, and "
                            "remove damaged ONNX exports (the next start writes them again); memory must be stopped")
    check.set_defaults(handler=sqlite_file(run_check), memory=None)
    reapply = commands.add_parser("reapply-erasures", parents=[parent],
                                  help="apply again what the erasure ledger holds and the database lacks (run it "
                                       "after pg_restore; memory also does it at every start)",
                                  description="Apply the erasure ledger again, then say what it did.")
    reapply.set_defaults(handler=reapply_erasures, memory="light")


def sqlite_file(command: Callable[[argparse.Namespace, Terminal], int],
                ) -> Callable[[argparse.Namespace, Terminal], Awaitable[int]]:
    """``command`` run off the loop, refused while memory lives in PostgreSQL; a BackupError is one line, exit 1."""
    async def handler(args: argparse.Namespace, term: Terminal) -> int:
        if args.settings.database:
            print(f"error: memory is kept in PostgreSQL (DATABASE_URL is set); {args.command} works on the SQLite "
                  "file: use pg_dump and pg_restore", file=term.err)
            return USAGE
        try:
            # A restore cut short is finished or undone before anything reads the file (restore_journal.py).
            try:
                recovered = await asyncio.to_thread(recover_restore, args.db)
            except OSError as error:
                raise BackupError(f"a restore into {args.db} was cut short and could not be finished or undone: "
                                  f"{why(error)}") from error
            if recovered is not None:
                print(recovered, file=term.err)
            return await asyncio.to_thread(command, args, term)
        except BackupError as error:
            print(f"error: {error}", file=term.err)
            return FAILED

    return handler


def run_backup(args: argparse.Namespace, term: Terminal) -> int:
    made = backup_database(args.db, args.destination)
    print(f"backed up {args.db} to {made.path}: {made.messages} messages, {made.size_bytes / 1e6:.1f} MB",
          file=term.out)
    return OK


def run_restore(args: argparse.Namespace, term: Terminal) -> int:
    done = restore_database(args.source, args.db, args.index_dir, keep_replaced_in=args.keep_replaced,
                            discard_replaced=args.discard_replaced,
                            erasures=partial(erasures_for_restore, args.db.parent / LEDGER_NAME))
    if done.left_behind is not None:
        replaced = f"the database it replaced is still at {done.replaced} ({done.left_behind})"
    elif done.replaced is not None:
        replaced = f"the database it replaced is kept as {done.replaced}"
    else:
        replaced = "the database it replaced was deleted" if args.discard_replaced else "it replaced no database"
    erased = f", {done.erasures} erasures made since to apply as memory opens" if done.erasures else ""
    print(f"restored {args.source} into {args.db}: {done.messages} messages{erased}; {replaced}; the vector indexes "
          "are rebuilt on the next start", file=term.out)
    return OK


def run_check(args: argparse.Namespace, term: Terminal) -> int:
    """The whole database, with no time limit (a start checks only what 5 s allow), and the ONNX exports beside it,
    hashed whole (a start hashes sampled blocks)."""
    out, err = term.out, term.err
    if not args.db.is_file():
        print(f"error: there is no memory database at {args.db}", file=err)
        return FAILED
    lock = DatabaseLock(args.db)
    alone = lock.shared()  # and no restore meanwhile
    try:
        pages = quick_check(args.db, budget_s=None)
        if not pages.ok:
            print(f"error: the memory database {args.db} is damaged ({pages.problems[0]}; {len(pages.problems)} "
                  f"problem(s) found). " + RESTORE_ADVICE.format(path=args.db), file=err)
            return FAILED
        exports_whole = check_exports(args.db.parent / ONNX_FOLDER, args.repair and alone, term)
        if not alone:  # the keyword check holds the write lock throughout: it would stall the bot's writes
            rows = compare_fts_rows(args.db)  # a read: it holds up nothing
            if not rows.ok:
                print(f"error: the keyword index of {args.db} {rows.describe()}: those messages cannot be found by "
                      f"their words; {REPAIR_HINT}", file=err)
                return FAILED
            if not exports_whole:
                return FAILED
            print(f"{args.db}: no damage found; its keyword index is checked only while memory is stopped", file=out)
            return OK
        keywords_whole = _check_keywords(args, term)
        if keywords_whole is None:
            return FAILED
        print_backlog(vectors_waiting(args.db), err)
    except sqlite3.Error as error:
        print(f"error: {explain_open_failure(args.db, error)}", file=err)
        return FAILED
    finally:
        lock.release()
    if not (keywords_whole and exports_whole):
        return FAILED
    print(f"{args.db}: no damage found", file=out)
    return OK


def _check_keywords(args: argparse.Namespace, term: Terminal) -> bool | None:
    """FTS5's own check (a damaged index is rebuilt at once, as a start does), then its rows against the messages
    (rebuilt with ``--repair``). Whether no damage is left; None when the check could not run."""
    keywords = check_fts(args.db, budget_s=None)
    if not keywords.ok:
        count = rebuild_fts(args.db)
        print(f"the keyword index was damaged ({keywords.problems[0]}); rebuilt it from {count} messages",
              file=term.out)
        return True
    if not keywords.complete:
        print(f"error: the keyword index of {args.db} could not be checked (the database stayed busy); try again",
              file=term.err)
        return None
    rows: KeywordRows = compare_fts_rows(args.db)
    if rows.ok:
        return True
    if not args.repair:
        print(f"error: the keyword index of {args.db} {rows.describe()}: those messages cannot be found by their "
              f"words; {REPAIR_HINT}", file=term.err)
        return False
    count = rebuild_fts(args.db)
    print(f"the keyword index {rows.describe()}; rebuilt it from {count} messages", file=term.out)
    return True


def check_exports(root: Path, repair: bool, term: Terminal) -> bool:
    """Hash every file of every ONNX export under ``root`` whole against its manifest; with ``repair``, remove each
    damaged one (the next start exports it again). Whether none is left damaged."""
    if not root.is_dir():
        return True
    whole = True
    for folder in sorted(root.iterdir()):
        if folder.name.startswith(".") or not folder.is_dir():  # a staging folder: an export under way, or killed
            continue
        problem = export_problem(folder, full=True)
        if problem is None:
            continue
        if not repair:
            print(f"error: the ONNX export {folder} {problem}; {REPAIR_HINT} to remove it (the next start exports "
                  f"it again)", file=term.err)
            whole = False
            continue
        with exporting_into(root):  # never under an export writing it
            if export_problem(folder, full=True) is not None:
                shutil.rmtree(folder)
        print(f"the ONNX export {folder} {problem}; removed it: the next start exports it again", file=term.out)
    return whole


def vectors_waiting(db: Path) -> int:
    """Stored messages waiting for a vector, read from the file alone (no model loaded)."""
    from ..store.sqlite.pending import COUNT_PENDING

    connection = sqlite3.connect(db, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout = 5000")
        if not connection.execute(PENDING_TABLE).fetchone():  # a database no start has migrated yet
            return 0
        return int(connection.execute(COUNT_PENDING).fetchone()[0])
    finally:
        connection.close()


async def reapply_erasures(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    """Opening memory applied them (``Erasures.reapply``, privacy/erasures.py); this says what it did."""
    applied, forgotten = memory.erasures.reapplied
    print(f"erasures: {applied} applied again ({forgotten} messages forgotten); memory holds nothing the erasure "
          f"ledger erased", file=term.out)
    return OK
