"""Memory from a terminal: import DiscordChatExporter JSON, search what the bot would recall, back up and restore.

    python -m cogs.memory import EXPORT.json...
    python -m cogs.memory search QUERY [--guild G] [--channel C] [--no-rerank]
    python -m cogs.memory migrate --to postgresql://USER@HOST/DB [--model NAME]
    python -m cogs.memory backup DEST
    python -m cogs.memory restore BACKUP.sqlite3
    python -m cogs.memory check
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .store.sqlite.backup import BackupError, backup_database, restore_database
from .runtime.config import DB_PATH, INDEX_DIR, PROFILE_CHOICE_PATH, PROFILES_DIR, database_url
from .store.sqlite.lock import DatabaseLock
from .store.sqlite.integrity import RESTORE_ADVICE, check_fts, explain_open_failure, quick_check, rebuild_fts
from .records import MAX_QUERY_CHARS, MAX_RESULTS, Candidate, SearchFilters

if TYPE_CHECKING:
    from .memory import Memory

log = logging.getLogger(__name__)

# SQLite holds signed 64-bit integers, and no Discord id (a snowflake) reaches 2**63.
SNOWFLAKE_END = 2**63


# argparse turns an ArgumentTypeError into "error: argument X: <message>" and exit code 2, with no traceback.
def query_text(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("is blank; give some words to search for")
    if len(value) > MAX_QUERY_CHARS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_QUERY_CHARS} characters; you gave {len(value)}")
    return value


def whole_number(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number; you gave {value!r}") from None


def result_limit(value: str) -> int:
    number = whole_number(value)
    if not 1 <= number <= MAX_RESULTS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_RESULTS}; you gave {number}")
    return number


def discord_id(value: str) -> int:
    number = whole_number(value)
    if not 0 < number < SNOWFLAKE_END:
        raise argparse.ArgumentTypeError(f"must be a Discord id (a positive whole number); you gave {number}")
    return number


def postgres_url(value: str) -> str:
    if not value.startswith(("postgresql://", "postgres://")):
        raise argparse.ArgumentTypeError(f"must be a postgresql:// URL; you gave {value!r}")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cogs.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=DB_PATH, help="SQLite file (default: %(default)s)")
    parser.add_argument("--index-dir", type=Path, default=INDEX_DIR, help="FAISS index folder")
    parser.add_argument("--profile", help="profile name or .toml path (default: the bot's saved choice or the hardware's)")
    commands = parser.add_subparsers(dest="command", required=True)
    importer = commands.add_parser("import", help="ingest DiscordChatExporter JSON exports (idempotent)")
    # Checked one by one as they are read: a bad file is reported, and the others are still imported.
    importer.add_argument("exports", nargs="+", type=Path, metavar="EXPORT.json")
    search = commands.add_parser("search", help="search memory as the bot would recall it")
    search.add_argument("query", type=query_text, help=f"what to look for (at most {MAX_QUERY_CHARS} characters)")
    search.add_argument("--guild", type=discord_id, help="guild id (default: the only guild in memory)")
    search.add_argument("--channel", type=discord_id, action="append", help="only this channel id (repeatable)")
    search.add_argument("--limit", type=result_limit, default=10, help=f"how many results (1-{MAX_RESULTS})")
    search.add_argument("--no-rerank", action="store_true", help="first stage only (vector + keyword fusion)")
    migrate = commands.add_parser("migrate", help="copy the SQLite memory into PostgreSQL (resumable, one way)")
    migrate.add_argument("--to", required=True, type=postgres_url, metavar="postgresql://...",
                         help="the PostgreSQL database (pgvector installed) to copy into")
    migrate.add_argument("--model", help="whose vectors to copy (default: the profile's embedding model)")
    backup = commands.add_parser("backup", help="copy the database to DEST, safely while the bot runs")
    backup.add_argument("destination", type=Path, metavar="DEST", help="a new file, or a folder for a dated one")
    restore = commands.add_parser("restore", help="replace the database with a backup (stop the bot first)")
    restore.add_argument("source", type=Path, metavar="BACKUP.sqlite3")
    commands.add_parser("check", help="check the whole database for damage; rebuild a damaged keyword index")
    return parser.parse_args(argv)


def load_profile_for(args: argparse.Namespace):
    from .runtime.profile import load_profile
    from .runtime.profile_choice import saved_or_selected_profile

    if args.profile:
        return load_profile(args.profile)
    # The bot's saved choice sits beside its database.
    return saved_or_selected_profile(args.db.parent / PROFILE_CHOICE_PATH.name, PROFILES_DIR)


def format_hit(rank: int, hit: Candidate) -> str:
    rerank = hit.get("rerank_score")
    rerank_text = "-" if rerank is None else f"{rerank:.4f}"
    text = " ".join(hit["content"].split())
    return (
        f"{rank:>2}. score={hit['score']:.4f} rerank_score={rerank_text} "
        f"#{hit['channel_id']} {hit['author_name']} {hit['created_at'][:16]}\n    {text[:300]}"
    )


def format_rerank(status: dict) -> str:
    """The reranker's part of this query, as /memory stats reports it per hour."""
    last = status["last_query"]
    runs_on = f"{status['backend']} {status['dtype']}" if status["backend"] else "not loaded"
    if last is None:
        return f"rerank: {runs_on}, nothing scored ({status['reason'] or status['last_error'] or 'no candidates'})"
    return (f"rerank: {last['by'] or runs_on}, {last['scored']} of {last['offered']} candidates scored in "
            f"{last['ms']:,.0f} ms "
            f"({last['cached']} from the score cache; prompt prefix cache hits so far: "
            f"{status['prefix_cache_hits'] if status['prefix_cache_hits'] is not None else '-'})")


async def search(memory, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    guild_id = args.guild
    if guild_id is None:
        guilds = await memory.guild_ids()
        if len(guilds) != 1:
            known = ", ".join(map(str, guilds)) or "none yet"
            print(f"error: pass --guild (guilds in memory: {known})", file=err)
            return 2
        guild_id = guilds[0]
    filters = SearchFilters(guild_id=guild_id, channel_ids=frozenset(args.channel) if args.channel else None)
    if memory.reranker is not None and not args.no_rerank:
        await memory.reranker.aload()  # the bot's recalls do not wait for the model; this one query does
    hits = await memory.recall(args.query, filters, args.limit, rerank=not args.no_rerank)
    if not hits:
        print("no results", file=out)
    for rank, hit in enumerate(hits, start=1):
        print(format_hit(rank, hit), file=out)
    if memory.reranker is not None and not args.no_rerank:
        print(format_rerank(memory.reranker.status()), file=err)
    return 0


class TableProgress:
    """Progress of the copy on stderr: one line per table, rewritten in place while it runs."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.table: str | None = None

    def __call__(self, table: str, done: int, total: int, skipped: int) -> None:
        if self.table not in (None, table):
            self.out.write("\n")
        self.table = table
        self.out.write(f"\r{table}: {done}/{total} ({skipped} already there)")
        self.out.flush()

    def finish(self) -> None:
        if self.table is not None:
            self.out.write("\n")


async def migrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Copy the SQLite memory into PostgreSQL, then print both sides' counts; 1 when any table differs."""
    from .store.postgres.migrate import MigrationError, copy_memory
    from .runtime.profile import ProfileError

    try:
        model = args.model or (await asyncio.to_thread(load_profile_for, args)).embedding_model
    except ProfileError as error:
        print(f"error: {error}", file=err)
        return 2
    progress = TableProgress(err)
    try:
        counts = await copy_memory(args.db, args.to, model, progress)
    except MigrationError as error:
        progress.finish()
        print(f"error: {error}", file=err)
        return 1
    progress.finish()
    print(f"{'table':<20} {'sqlite':>10} {'postgresql':>10}", file=out)
    for count in counts:
        print(f"{count.table:<20} {count.sqlite:>10} {count.postgresql:>10}{'' if count.matches else '  MISMATCH'}",
              file=out)
    if all(count.matches for count in counts):
        print(f"copied: every table matches ({model} vectors)", file=out)
        return 0
    print("error: counts differ; was the PostgreSQL database empty (or only an earlier copy) when this began?",
          file=err)
    return 1


def backup(args: argparse.Namespace, out: TextIO) -> int:
    made = backup_database(args.db, args.destination)
    print(f"backed up {args.db} to {made.path}: {made.messages} messages, {made.size_bytes / 1e6:.1f} MB", file=out)
    return 0


def restore(args: argparse.Namespace, out: TextIO) -> int:
    done = restore_database(args.source, args.db, args.index_dir)
    print(f"restored {args.source} into {args.db}: {done.messages} messages; the vector indexes are rebuilt from it "
          "on the next start", file=out)
    if done.replaced is not None:
        print(f"the database it replaced is kept as {done.replaced}; delete it once the restore looks right",
              file=out)
    return 0


def check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The whole database, with no time limit (a start checks only what 5 s allow)."""
    if not args.db.is_file():
        print(f"error: there is no memory database at {args.db}", file=err)
        return 1
    lock = DatabaseLock(args.db)
    alone = lock.shared()  # and no restore meanwhile
    try:
        pages = quick_check(args.db, budget_s=None)
        if not pages.ok:
            print(f"error: the memory database {args.db} is damaged ({pages.problems[0]}; {len(pages.problems)} "
                  f"problem(s) found). " + RESTORE_ADVICE.format(path=args.db), file=err)
            return 1
        if not alone:  # the keyword check holds the write lock throughout: it would stall the bot's writes
            print(f"{args.db}: no damage found; its keyword index is checked only while memory is stopped", file=out)
            return 0
        keywords = check_fts(args.db, budget_s=None)
        if not keywords.ok:
            count = rebuild_fts(args.db)
            print(f"the keyword index was damaged ({keywords.problems[0]}); rebuilt it from {count} messages",
                  file=out)
        elif not keywords.complete:
            print(f"error: the keyword index of {args.db} could not be checked (the database stayed busy); try again",
                  file=err)
            return 1
    except sqlite3.Error as error:
        print(f"error: {explain_open_failure(args.db, error)}", file=err)
        return 1
    finally:
        lock.release()
    print(f"{args.db}: no damage found", file=out)
    return 0


async def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from .chat_export.importer import import_exports
    from .memory import Memory, MemoryOpenError
    from .runtime.profile import ProfileError

    if args.command == "migrate":
        return await migrate(args, out, err)
    if args.command in ("backup", "restore", "check") and database_url():
        print(f"error: memory is kept in PostgreSQL (DATABASE_URL is set); {args.command} works on the SQLite file: "
              "use pg_dump and pg_restore", file=err)
        return 2
    try:  # these read and copy the database only: no profile, no models
        if args.command == "backup":
            return await asyncio.to_thread(backup, args, out)
        if args.command == "restore":
            return await asyncio.to_thread(restore, args, out)
    except BackupError as error:
        print(f"error: {error}", file=err)
        return 1
    if args.command == "check":
        return await asyncio.to_thread(check, args, out, err)
    try:
        profile = await asyncio.to_thread(load_profile_for, args)
    except ProfileError as error:
        print(f"error: {error}", file=err)
        return 2
    try:
        memory = await Memory.open(profile, args.db, args.index_dir, database_url())
    except MemoryOpenError as error:
        print(f"error: {error}", file=err)
        return 1
    try:
        if args.command == "import":
            code = await import_exports(memory, args.exports, out, err)
        else:
            code = await search(memory, args, out, err)
    except sqlite3.DatabaseError as error:  # e.g. damage found mid-run: say what to do, not a traceback
        print(f"error: {explain_open_failure(args.db, error)}", file=err)
        code = 1
    finally:
        closed = await _close(memory, err)
    return code if closed else 1


async def _close(memory: Memory, err: TextIO) -> bool:
    """Close memory; a failure (everything is closed anyway) is one line on ``err``."""
    try:
        await memory.close()
    except Exception as error:
        log.debug("Closing memory failed", exc_info=True)
        print(f"error: memory did not close cleanly: {error}", file=err)
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
