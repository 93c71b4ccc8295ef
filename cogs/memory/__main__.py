"""Memory from a terminal: import DiscordChatExporter JSON, search what the bot would recall, back up and restore.

    python -m cogs.memory import EXPORT.json...
    python -m cogs.memory search QUERY [--guild G] [--channel C] [--no-rerank] [--explain]
    python -m cogs.memory migrate --to postgresql://USER@HOST/DB [--model NAME]
    python -m cogs.memory backup DEST
    python -m cogs.memory restore BACKUP.sqlite3
    python -m cogs.memory check
    python -m cogs.memory reapply-erasures
    python -m cogs.memory dashboard-link
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
from .runtime.progress import TerminalProgress
from .store.sqlite.lock import DatabaseLock
from .store.sqlite.integrity import RESTORE_ADVICE, check_fts, explain_open_failure, quick_check, rebuild_fts
from .records import MAX_QUERY_CHARS, MAX_RESULTS, Candidate, SearchFilters
from .store.protocol import DatabaseUnavailableError

if TYPE_CHECKING:
    from .memory import Memory
    from .runtime.profile import MemoryProfile

log = logging.getLogger(__name__)

# SQLite holds signed 64-bit integers, and no Discord id (a snowflake) reaches 2**63.
SNOWFLAKE_END = 2**63
PENDING_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pending_vectors'"


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
    search.add_argument("--explain", action="store_true",
                        help="with each hit, why it was found: its rank before and after the reranker, and which "
                             "side found it (as the dashboard's Search page shows it)")
    migrate = commands.add_parser("migrate", help="copy the SQLite memory into PostgreSQL (resumable, one way)")
    migrate.add_argument("--to", required=True, type=postgres_url, metavar="postgresql://...",
                         help="the PostgreSQL database (pgvector installed) to copy into")
    migrate.add_argument("--model", help="whose vectors to copy: a model name or a key as stored (default: the "
                         "profile's embedding model, under the key memory stores its vectors)")
    backup = commands.add_parser("backup", help="copy the database to DEST, safely while the bot runs")
    # Kept as typed: Path would drop the trailing "/" that says DEST is a folder.
    backup.add_argument("destination", metavar="DEST",
                        help="a folder (an existing one, or a path ending in /) for a dated copy, or a new file")
    restore = commands.add_parser("restore", help="replace the database with a backup (stop the bot first)")
    restore.add_argument("source", type=Path, metavar="BACKUP.sqlite3")
    commands.add_parser("check", help="check the whole database for damage; rebuild a damaged keyword index")
    commands.add_parser("reapply-erasures", help="apply again what the erasure ledger holds and the database lacks "
                                                 "(run it after pg_restore; memory also does it at every start)")
    commands.add_parser("dashboard-link", help="print a one-time sign-in link to the running bot's web dashboard "
                                               "(exit code 1 when the dashboard is not configured)")
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


def format_explanation(rank: int, hit: Candidate) -> str:
    """Why ``hit`` was found; the core does not break the first-stage score into its parts yet."""
    after = rank if hit.get("rerank_score") is not None else "-"
    return (f"    explain: rank before rerank {hit['rank']}, after {after}; found by "
            f"{', '.join(hit['sources']) or '-'}; score parts: not reported")


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
    from .runtime.profile import reranks

    guild_id = args.guild
    if guild_id is None:
        guilds = await memory.guild_ids()
        if len(guilds) != 1:
            known = ", ".join(map(str, guilds)) or "none yet"
            print(f"error: pass --guild (guilds in memory: {known})", file=err)
            return 2
        guild_id = guilds[0]
    filters = SearchFilters(guild_id=guild_id, channel_ids=frozenset(args.channel) if args.channel else None)
    if not args.no_rerank and reranks(memory.profile):
        print(loading_line(memory.profile), file=err)
        await memory.load_reranker()  # the bot's recalls do not wait for the model; this one query does
    hits = await memory.recall(args.query, filters, args.limit, rerank=not args.no_rerank)
    if not hits:
        print("no results", file=out)
    for rank, hit in enumerate(hits, start=1):
        print(format_hit(rank, hit), file=out)
        if args.explain:
            print(format_explanation(rank, hit), file=out)
    if memory.reranker is not None and not args.no_rerank:
        print(format_rerank(memory.reranker.status()), file=err)
    print_backlog(await memory.vectors_pending(), err)
    return 0


def loading_line(profile: MemoryProfile) -> str:
    """What ``search`` says before it waits for the reranker: what loads, and what a first use costs."""
    settings = profile.reranker
    return (f"reranker: loading {settings.model} ({settings.provider}, {settings.backend}); a first use downloads it "
            "and, on ONNX Runtime, exports it once (minutes); --no-rerank skips it")


def print_backlog(waiting: int, err: TextIO) -> None:
    """A read-only command leaves the vector backlog alone (the bot or the next start embeds it): it says so."""
    if waiting:
        print(f"{waiting} stored messages wait for their vectors: found by their words now, by their meaning once "
              "the bot (or the next import) has embedded them", file=err)


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
    from .vectors.embedding import vector_key

    if args.model:
        return args.model if args.model in stored else vector_key(args.model)
    profile = await asyncio.to_thread(load_profile_for, args)
    return vector_key(profile.embedding_model, profile.embedding_query_prefix, profile.embedding_passage_prefix)


async def migrate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Copy the SQLite memory into PostgreSQL, then print both sides' counts; 1 when any table differs in any guild."""
    from .store.postgres.migrate import MigrationError, copy_memory, stored_models
    from .runtime.profile import ProfileError

    try:
        stored = await stored_models(args.db)
        model = await vector_key_for(args, stored)
    except MigrationError as error:
        print(f"error: {error}", file=err)
        return 1
    except ProfileError as error:
        print(f"error: {error}", file=err)
        return 2
    progress = TableProgress(err)
    try:
        report = await copy_memory(args.db, args.to, model, progress)
    except MigrationError as error:
        progress.finish()
        print(f"error: {error}", file=err)
        return 1
    except DatabaseUnavailableError as error:
        progress.finish()
        print(f"error: {error} (what was copied so far stays; the next run copies only the rest)", file=err)
        return 1
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
        return 0
    for count in report.differences:
        print(f"error: {count.difference(model)}", file=err)
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


def dashboard_link(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """A fresh one-time sign-in link: written (hashed) where the running bot's dashboard reads it, beside the
    database. The settings come from the environment and the bot's .env, as the bot reads them."""
    import os

    from dotenv import dotenv_values

    from .runtime.config import ROOT
    from .dashboard.auth import LoginTokens
    from .dashboard.config import PORT_ENV, DashboardConfig, DashboardConfigError

    environ = {key: value for key, value in dotenv_values(ROOT / ".env").items() if value is not None}
    try:
        config = DashboardConfig.from_env(args.db.parent, {**environ, **os.environ})
    except DashboardConfigError as error:
        print(f"error: {error}", file=err)
        return 1
    if config is None:
        print(f"error: the dashboard is off: set {PORT_ENV} (in .env or the environment) and restart the bot",
              file=err)
        return 1
    try:
        token = LoginTokens(config.token_dir, config.login_ttl_s).issue()
    except OSError as error:
        print(f"error: could not write the sign-in token under {config.token_dir}: {error.strerror}", file=err)
        return 1
    print(config.login_link(token), file=out)
    print(f"valid once, for {config.login_ttl_s / 60:.0f} minutes, while the bot runs", file=err)
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
        print_backlog(vectors_waiting(args.db), err)
    except sqlite3.Error as error:
        print(f"error: {explain_open_failure(args.db, error)}", file=err)
        return 1
    finally:
        lock.release()
    print(f"{args.db}: no damage found", file=out)
    return 0


def vectors_waiting(db: Path) -> int:
    """Stored messages waiting for a vector, read from the file alone (no model loaded)."""
    from .store.sqlite.pending import COUNT_PENDING

    connection = sqlite3.connect(db, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout = 5000")
        if not connection.execute(PENDING_TABLE).fetchone():  # a database no start has migrated yet
            return 0
        return connection.execute(COUNT_PENDING).fetchone()[0]
    finally:
        connection.close()


async def run(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from .chat_export.importer import import_exports
    from .memory import Memory, MemoryOpenError
    from .runtime.profile import ProfileError

    if args.command == "migrate":
        return await migrate(args, out, err)
    if args.command == "dashboard-link":
        return await asyncio.to_thread(dashboard_link, args, out, err)
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
        # Only an import embeds: a read-only command leaves the vector backlog to the bot or the next start.
        # No command loads the reranker as memory opens: search loads it when it reranks (preload is the bot's).
        memory = await Memory.open(profile, args.db, args.index_dir, database_url(),
                                   embed_backlog=args.command == "import", reranker=False)
    except MemoryOpenError as error:
        print(f"error: {error}", file=err)
        return 1
    try:
        if args.command == "import":
            code = await import_exports(memory, args.exports, out, err)
        elif args.command == "reapply-erasures":
            code = reapply_erasures(memory, out)
        else:
            code = await search(memory, args, out, err)
    except sqlite3.DatabaseError as error:  # e.g. damage found mid-run: say what to do, not a traceback
        print(f"error: {explain_open_failure(args.db, error)}", file=err)
        code = 1
    except DatabaseUnavailableError as error:  # PostgreSQL went away mid-run
        print(f"error: {error}", file=err)
        code = 1
    finally:
        closed = await _close(memory, err)
    return code if closed else 1


def reapply_erasures(memory: Memory, out: TextIO) -> int:
    """Opening memory applied them (``Memory.reapply_erasures``); this says what it did."""
    applied, forgotten = memory.reapplied
    print(f"erasures: {applied} applied again ({forgotten} messages forgotten); memory holds nothing the erasure "
          f"ledger erased", file=out)
    return 0


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
