"""Bringing messages in: ``import`` (DiscordChatExporter JSON) and ``migrate`` (SQLite into PostgreSQL)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..store.protocol import DatabaseUnavailableError
from ..runtime.progress import TerminalProgress
from ..runtime.safe_text import redacted_text
from .options import FAILED, OK, USAGE, Terminal, load_profile_for, postgres_url

if TYPE_CHECKING:
    from ..memory import Memory


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser],
             parent: argparse.ArgumentParser) -> None:
    importer = commands.add_parser("import", parents=[parent], help="ingest DiscordChatExporter JSON exports "
                                   "(idempotent)", description="Store DiscordChatExporter JSON exports; safe to "
                                   "re-run. One line per file; a bad file is one error line and the others go on.")
    # Checked one by one as they are read: a bad file is reported, and the others are still imported.
    importer.add_argument("exports", nargs="+", type=Path, metavar="EXPORT.json")
    importer.set_defaults(handler=import_files, memory="write")
    migrate = commands.add_parser("migrate", parents=[parent], help="copy the SQLite memory into PostgreSQL "
                                  "(resumable, one way)", description="Copy the SQLite memory into an empty "
                                  "PostgreSQL database, then compare every table per guild.")
    migrate.add_argument("--to", required=True, type=postgres_url, metavar="postgresql://...",
                         help="the PostgreSQL database (pgvector installed) to copy into")
    migrate.add_argument("--model", help="whose vectors to copy: a model name or a key as stored (default: the "
                         "profile's embedding model, under the key memory stores its vectors)")
    migrate.set_defaults(handler=migrate_memory, memory=None)


async def import_files(memory: Memory, args: argparse.Namespace, term: Terminal) -> int:
    """Import the exports; Ctrl-C stops the import cleanly (what was read is stored, memory closes) with exit 130."""
    from ..chat_export.importer import import_exports

    stop = asyncio.Event()
    with ctrl_c_sets(stop, term.err), startup_objects_frozen():
        return await import_exports(memory, args.exports, term.out, term.err, stop)


@contextlib.contextmanager
def startup_objects_frozen() -> Iterator[None]:
    """Meanwhile everything alive before the import (modules, memory: several hundred thousand objects) is out of
    the garbage collector's reach, as the bot keeps it (bot.py): a full collection walks every tracked object holding
    the GIL, and with batches of messages passing through they came every few seconds, stalling the event loop
    200-300 ms each on the 2-core dev box (bench/import_stream.py, docs/ingest.md)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def ctrl_c_sets(stop: asyncio.Event, err: TextIO) -> Iterator[None]:
    """Meanwhile Ctrl-C (SIGINT) sets ``stop`` instead of cancelling the command mid-write (asyncio's way), so that
    what was read is stored and memory closes as after any import."""
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signal.SIGINT)

    def pressed() -> None:
        if not stop.is_set():
            print("interrupted: storing what was read, then stopping", file=err)
        stop.set()

    try:
        loop.add_signal_handler(signal.SIGINT, pressed)
    except (RuntimeError, ValueError):  # not the main thread (an embedding program's), or no signals here
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if previous is not None:  # None: set outside Python, and left as it was
            signal.signal(signal.SIGINT, previous)


class TableProgress:
    """Progress of the copy on stderr, a table at a time: a bar on a terminal, plain lines elsewhere."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.table: str | None = None
        self._progress: TerminalProgress | None = None

    def __call__(self, table: str, done: int, total: int, skipped: int) -> None:
        if self._progress is None or self.table != table:
            self.finish()
            self._progress = TerminalProgress(table, total, self.out, unit="row")
        self.table = table
        self._progress.update(done, f"{skipped} already there")

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.close()
            self._progress = None


async def vector_key_for(args: argparse.Namespace, stored: dict[str, int]) -> str:
    """The key whose vectors migrate copies: that of the profile's model, derived as memory derives it (name, passage
    prefix, input form), or of ``--model`` (a model name, or a key as stored)."""
    from ..vectors.embedding import vector_key

    if args.model:
        return args.model if args.model in stored else vector_key(args.model)
    profile = await asyncio.to_thread(load_profile_for, args)
    return vector_key(profile.embedding_model, profile.embedding_query_prefix, profile.embedding_passage_prefix)


async def migrate_memory(args: argparse.Namespace, term: Terminal) -> int:
    """Copy the SQLite memory into PostgreSQL, then print both sides' counts; 1 when any table differs in any guild."""
    from ..runtime.profile import ProfileError
    from ..store.postgres.migrate import MigrationError, copy_memory, stored_models

    out, err = term.out, term.err
    try:
        stored = await stored_models(args.db)
        model = await vector_key_for(args, stored)
    except MigrationError as error:
        print(f"error: {error}", file=err)
        return FAILED
    except ProfileError as error:
        print(f"error: {redacted_text(str(error))}", file=err)
        return USAGE
    progress = TableProgress(err)
    try:
        report = await copy_memory(args.db, args.to, model, progress)
    except MigrationError as error:
        progress.finish()
        print(f"error: {error}", file=err)
        return FAILED
    except DatabaseUnavailableError as error:
        progress.finish()
        print(f"error: {error} (what was copied so far stays; the next run copies only the rest)", file=err)
        return FAILED
    progress.finish()
    print(f"{'table':<20} {'sqlite':>10} {'postgresql':>10}", file=out)
    for count in report.totals:
        print(f"{count.table:<20} {count.sqlite:>10} {count.postgresql:>10}{'' if count.matches else '  MISMATCH'}",
              file=out)
    for other, vectors in sorted(stored.items()):
        if other != model:
            print(f"not copied: {vectors} vectors under {other!r} (another model or an earlier form of it)", file=out)
    if report.waiting:
        print(f"{report.waiting} copied messages have no {model} vector; memory embeds them in the background when "
              "it opens on PostgreSQL", file=out)
    if report.matches:
        print(f"copied: every table matches in every guild ({model} vectors)", file=out)
        return OK
    for count in report.differences:
        print(f"error: {count.difference(model)}", file=err)
    print("error: counts differ; was the PostgreSQL database empty (or only an earlier copy) when this began?",
          file=err)
    return FAILED
