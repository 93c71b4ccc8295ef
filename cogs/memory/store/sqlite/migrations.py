"""The memory database's schema as named, ordered migrations; each runs in one transaction and is recorded."""

from __future__ import annotations

import logging
import time

import aiosqlite

from ...language.keywords import fts_document
from ..migration import DELETE_VECTORS_OF_EARLIER_FORMS, SELECT_APPLIED, Migration
from ..neighbours import CREATE_REPLY_INDEX

__all__ = ("FTS_TOKENIZER", "MIGRATIONS", "Migration", "apply_migrations")

log = logging.getLogger(__name__)


CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)
"""
INSERT_APPLIED = "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)"
# Migrations that rebuild keyword rows call the Python document shaping (text.fts_document) from SQL.
FTS_DOCUMENT_FUNCTION = "memory_fts_document"
# The keyword table's tokenizer: unicode61 counts combining marks (category M) as part of a word, as a Thai,
# Devanagari or Arabic reader does; by default they would split one word into several.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co M*'"

# Appended to, never edited: a database records which of these it has run.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_initial",
        (
            """
            CREATE TABLE messages (
                id INTEGER PRIMARY KEY,
                message_id INTEGER NOT NULL UNIQUE,
                guild_id INTEGER NOT NULL,
                channel_id INTEGER NOT NULL,
                parent_channel_id INTEGER,
                author_id INTEGER NOT NULL,
                author_name TEXT NOT NULL,
                author_is_bot INTEGER NOT NULL DEFAULT 0,
                content TEXT NOT NULL,
                created_at REAL NOT NULL,
                edited_at REAL,
                reply_to_id INTEGER
            )
            """,
            "CREATE INDEX messages_guild_channel_time ON messages (guild_id, channel_id, created_at)",
            "CREATE INDEX messages_guild_author ON messages (guild_id, author_id)",
            "CREATE INDEX messages_guild_time ON messages (guild_id, created_at)",
            """
            CREATE VIRTUAL TABLE messages_fts USING fts5(
                body, author, tokenize = 'porter unicode61 remove_diacritics 2'
            )
            """,
            """
            CREATE TABLE embeddings (
                message_rowid INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
                model TEXT NOT NULL,
                vector BLOB NOT NULL,
                PRIMARY KEY (model, message_rowid)
            )
            """,
            "CREATE TABLE guild_settings (guild_id INTEGER PRIMARY KEY, settings TEXT NOT NULL)",
            """
            CREATE TABLE opt_outs (
                guild_id INTEGER NOT NULL,
                user_id INTEGER NOT NULL,
                PRIMARY KEY (guild_id, user_id)
            )
            """,
        ),
    ),
    Migration(
        # Bumped in the same transaction as any change to a guild's embeddings; a saved FAISS index records the
        # generation it reflects, so an index left behind by a crash (same ids, older vectors) is caught on load.
        "0002_index_generations",
        (
            """
            CREATE TABLE index_generations (
                guild_id INTEGER NOT NULL,
                model TEXT NOT NULL,
                generation INTEGER NOT NULL,
                PRIMARY KEY (guild_id, model)
            )
            """,
            # The primary key leads with the model, so deleting a message (ON DELETE CASCADE) needs this index.
            "CREATE INDEX embeddings_message_rowid ON embeddings (message_rowid)",
            # A channel is walked in (created_at, message_id) order to find a message's neighbours.
            "CREATE INDEX messages_channel_order ON messages (guild_id, channel_id, created_at, message_id)",
        ),
    ),
    Migration(
        # A public thread's messages are readable through its parent channel, so they stay recallable after
        # Discord archives the thread and it leaves the cache; a private thread's never are.
        "0003_private_threads",
        (
            "ALTER TABLE messages ADD COLUMN private_thread INTEGER NOT NULL DEFAULT 0",
            # Older rows did not record which kind of thread they came from: count each as private, so none leaks.
            "UPDATE messages SET private_thread = 1 WHERE parent_channel_id IS NOT NULL",
            # The permission filter's "or a public thread under a readable parent" branch reads this index (a
            # MULTI-INDEX OR, a time range included) instead of every message of the guild. Partial: it holds
            # only public threads' rows, so channel messages cost no extra write.
            """
            CREATE INDEX messages_public_thread_parent ON messages (guild_id, parent_channel_id, created_at)
            WHERE parent_channel_id IS NOT NULL AND private_thread = 0
            """,
        ),
    ),
    Migration(
        # Ids of deleted messages (never their content), so an add that arrives after the delete (a late gateway
        # event, a second process, a re-imported export) does not store the message again. Pruned by age.
        "0004_message_tombstones",
        (
            "CREATE TABLE message_tombstones (message_id INTEGER PRIMARY KEY, deleted_at REAL NOT NULL)",
            "CREATE INDEX message_tombstones_deleted_at ON message_tombstones (deleted_at)",
        ),
    ),
    Migration(
        # One row while something forgotten may still be readable in the files (old FTS5 segments, the WAL): set
        # in the forget's own transaction, cleared by the purge that erases it (purge.py), so a crash leaves it set.
        # Set at first: the FTS5 index of a database from before this migration still holds what was deleted.
        "0005_pending_purge",
        (
            "CREATE TABLE pending_purge (id INTEGER PRIMARY KEY CHECK (id = 1), since REAL NOT NULL)",
            "INSERT INTO pending_purge (id, since) VALUES (1, 0)",
        ),
    ),
    Migration(
        # Keyword search for every script: the tokenizer keeps combining marks inside a word (Thai, Devanagari,
        # Arabic), and fts_document() cuts Hangul and Thai runs into bigrams and parts Latin names and numbers
        # from CJK text. Every keyword row is rebuilt from its message in the new form.
        "0006_fts_all_scripts",
        (
            "DROP TABLE messages_fts",
            f"""
            CREATE VIRTUAL TABLE messages_fts USING fts5(body, author, tokenize = "{FTS_TOKENIZER}")
            """,
            f"""
            INSERT INTO messages_fts (rowid, body, author)
            SELECT id, {FTS_DOCUMENT_FUNCTION}(content), author_name FROM messages
            """,
        ),
    ),
    Migration(
        # Messages stored before their vector exists: a message is written (and keyword-searchable) as it arrives,
        # and waits here (with its guild) for its vector, across restarts. One the model could not embed keeps its
        # row, stamped ``rejected_at`` with the error, and is not tried again until its text or predecessor changes.
        "0007_pending_vectors",
        (
            """
            CREATE TABLE pending_vectors (
                message_rowid INTEGER PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
                guild_id INTEGER NOT NULL,
                rejected_at REAL,
                error TEXT
            )
            """,
            # The filler reads one guild's waiting messages at a time, in row id order.
            """
            CREATE INDEX pending_vectors_waiting ON pending_vectors (guild_id, message_rowid)
            WHERE rejected_at IS NULL
            """,
        ),
    ),
    Migration(
        # How far each channel's history has been read again (history.py), so a restart goes on from there: the
        # catch-up after a gateway session began, and /memory backfill in both directions.
        "0008_history_progress",
        (
            """
            CREATE TABLE catchup_progress (
                channel_id INTEGER PRIMARY KEY,
                guild_id INTEGER NOT NULL,
                parent_channel_id INTEGER,
                position INTEGER NOT NULL,
                anchor INTEGER NOT NULL,
                read INTEGER NOT NULL DEFAULT 0,
                added INTEGER NOT NULL DEFAULT 0,
                edited INTEGER NOT NULL DEFAULT 0,
                deleted INTEGER NOT NULL DEFAULT 0,
                finished INTEGER NOT NULL DEFAULT 0,
                updated_at REAL NOT NULL
            )
            """,
            "CREATE INDEX catchup_progress_guild ON catchup_progress (guild_id, parent_channel_id)",
            """
            CREATE TABLE backfill_progress (
                channel_id INTEGER PRIMARY KEY,
                guild_id INTEGER NOT NULL,
                parent_channel_id INTEGER,
                oldest_id INTEGER,
                newest_id INTEGER,
                reached_start INTEGER NOT NULL DEFAULT 0,
                updated_at REAL NOT NULL
            )
            """,
            "CREATE INDEX backfill_progress_guild ON backfill_progress (guild_id, parent_channel_id)",
            # A backfill used to keep only the oldest message it had read, in the guild's settings; it read newest
            # first from that run's present, so from here it reads on forward from that message, and back before it.
            """
            INSERT INTO backfill_progress (channel_id, guild_id, oldest_id, newest_id, updated_at)
            SELECT CAST(progress.key AS INTEGER), settings.guild_id, progress.value, progress.value,
                   (julianday('now') - 2440587.5) * 86400.0
            FROM guild_settings AS settings, json_each(settings.settings, '$.backfill_progress') AS progress
            """,
            # What reading history again must never store (history.Exclusion); a channel whose capture is off now
            # has been off since a moment nobody recorded, so from the start.
            """
            CREATE TABLE history_exclusions (
                guild_id INTEGER,
                channel_id INTEGER,
                author_id INTEGER,
                message_id INTEGER,
                since REAL NOT NULL DEFAULT 0,
                until REAL
            )
            """,
            "CREATE INDEX history_exclusions_guild ON history_exclusions (guild_id)",
            """
            INSERT INTO history_exclusions (guild_id, channel_id)
            SELECT settings.guild_id, disabled.value
            FROM guild_settings AS settings, json_each(settings.settings, '$.capture_disabled_channel_ids') AS disabled
            """,
        ),
    ),
    # Search looks up the replies (Discord's reply) to a question: what answers it, however far below it comes.
    Migration("0009_replies", (CREATE_REPLY_INDEX,)),
    Migration(
        # The erasure ledger's entries this database has applied (privacy/ledger.py): one that a restored or replaced
        # database lacks is applied again as memory opens.
        "0010_erasures",
        ("CREATE TABLE erasures (id TEXT PRIMARY KEY, at REAL NOT NULL, entry TEXT NOT NULL)",),
    ),
    Migration(
        # Guilds' and channels' names as last seen (names.py), so a terminal and the dashboard can say "#general"
        # instead of an id; a thread's row names its parent. Forgetting a channel or guild forgets its names.
        "0011_place_names",
        ("""
         CREATE TABLE place_names (
             guild_id INTEGER NOT NULL,
             kind TEXT NOT NULL CHECK (kind IN ('guild', 'channel')),
             id INTEGER NOT NULL,
             name TEXT NOT NULL,
             parent_id INTEGER,
             seen_at REAL NOT NULL,
             PRIMARY KEY (guild_id, kind, id)
         )
         """,),
    ),
    # Vectors that quote the message before them (store/migration.py says why).
    Migration("0012_vectors_of_the_message_alone", (DELETE_VECTORS_OF_EARLIER_FORMS,)),
    # The dashboards' Performance figures by the minute (dashboard_rows.py): a restart keeps them; a day's rows per
    # process kind at most, and no message text.
    Migration(
        "0013_performance_minutes",
        ("CREATE TABLE performance_minutes (origin TEXT NOT NULL, minute REAL NOT NULL, figures TEXT NOT NULL, "
         "PRIMARY KEY (origin, minute))",),
    ),
    Migration(
        # Where a member's messages were quoted (ids and times, never text: member_rows.Quotation), gone with the
        # message it notes; and when each member last downloaded what memory holds of them (the daily limit).
        "0014_member_records",
        ("""
         CREATE TABLE quotations (
             message_id INTEGER NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE,
             guild_id INTEGER NOT NULL,
             author_id INTEGER NOT NULL,
             channel_id INTEGER NOT NULL,
             quoted_at REAL NOT NULL,
             kind TEXT NOT NULL CHECK (kind IN ('answer', 'auto', 'llm', 'search')),
             answer_channel_id INTEGER,
             answer_message_id INTEGER
         )
         """,
         "CREATE INDEX quotations_member ON quotations (guild_id, author_id, quoted_at)",
         "CREATE INDEX quotations_message ON quotations (message_id)",
         "CREATE INDEX quotations_guild_time ON quotations (guild_id, quoted_at)",
         """
         CREATE TABLE member_exports (
             guild_id INTEGER NOT NULL,
             user_id INTEGER NOT NULL,
             exported_at REAL NOT NULL,
             PRIMARY KEY (guild_id, user_id)
         )
         """),
    ),
)


async def apply_migrations(conn: aiosqlite.Connection) -> list[str]:
    """Apply every migration the database has not recorded, in order; returns the names applied now."""
    await conn.execute(CREATE_SCHEMA_MIGRATIONS)
    await conn.create_function(FTS_DOCUMENT_FUNCTION, 1, fts_document, deterministic=True)
    applied = {row[0] for row in await conn.execute_fetchall(SELECT_APPLIED)}
    newly_applied: list[str] = []
    for migration in MIGRATIONS:
        if migration.name in applied:
            continue
        await conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(INSERT_APPLIED, (migration.name, time.time()))
        except BaseException:
            await conn.rollback()
            raise
        await conn.commit()
        log.info("Applied database migration %s", migration.name)
        newly_applied.append(migration.name)
    return newly_applied
