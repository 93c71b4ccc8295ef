"""The PostgreSQL schema as named, ordered migrations, applied once across processes under an advisory lock."""

from __future__ import annotations

import logging
import time

import asyncpg

from ..migration import DELETE_VECTORS_OF_EARLIER_FORMS, SELECT_APPLIED, Migration
from ..neighbours import CREATE_REPLY_INDEX
from ..protocol import StoreOpenError

__all__ = ("DIMENSION", "MIGRATIONS", "Migration", "ROWID_BLOCK", "apply_migrations")

log = logging.getLogger(__name__)

# all-MiniLM-L6-v2's width: the HNSW index needs a fixed dimension.
DIMENSION = 384
# Row ids are handed out in blocks from one sequence, so processes sharing the database never collide.
ROWID_BLOCK = 65_536
# Any constant both sides agree on: the key of the advisory lock that serialises migrations across processes.
MIGRATION_LOCK_KEY = 0x6D656D6F7279  # "memory"

# The same record as the SQLite side's (migrations.py), in PostgreSQL's types and placeholders.
CREATE_SCHEMA_MIGRATIONS = """
CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)
"""
INSERT_APPLIED = "INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)"
LOCK = "SELECT pg_advisory_lock($1)"
UNLOCK = "SELECT pg_advisory_unlock($1)"

# Appended to, never edited: a database records which of these it has run.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "0001_initial",
        (
            "CREATE EXTENSION IF NOT EXISTS vector",
            f"CREATE SEQUENCE message_rowid_blocks START 1 INCREMENT {ROWID_BLOCK}",
            """
            CREATE TABLE messages (
                id BIGINT PRIMARY KEY,
                message_id BIGINT NOT NULL UNIQUE,
                guild_id BIGINT NOT NULL,
                channel_id BIGINT NOT NULL,
                parent_channel_id BIGINT,
                private_thread BOOLEAN NOT NULL DEFAULT FALSE,
                author_id BIGINT NOT NULL,
                author_name TEXT NOT NULL,
                author_is_bot BOOLEAN NOT NULL DEFAULT FALSE,
                content TEXT NOT NULL,
                created_at DOUBLE PRECISION NOT NULL,
                edited_at DOUBLE PRECISION,
                reply_to_id BIGINT,
                -- body words weighted A, author words B: a query can ask for either (word:A, word:B).
                document TSVECTOR NOT NULL
            )
            """,
            "CREATE INDEX messages_channel_order ON messages (guild_id, channel_id, created_at, message_id)",
            "CREATE INDEX messages_guild_author ON messages (guild_id, author_id)",
            "CREATE INDEX messages_guild_time ON messages (guild_id, created_at)",
            """
            CREATE INDEX messages_public_thread_parent ON messages (guild_id, parent_channel_id, created_at)
            WHERE parent_channel_id IS NOT NULL AND NOT private_thread
            """,
            "CREATE INDEX messages_document ON messages USING gin (document)",
            f"""
            CREATE TABLE embeddings (
                message_rowid BIGINT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
                model TEXT NOT NULL,
                vector vector({DIMENSION}) NOT NULL,
                PRIMARY KEY (model, message_rowid)
            )
            """,
            "CREATE INDEX embeddings_message_rowid ON embeddings (message_rowid)",
            "CREATE INDEX embeddings_vector ON embeddings USING hnsw (vector vector_cosine_ops)",
            """
            CREATE TABLE index_generations (
                guild_id BIGINT NOT NULL,
                model TEXT NOT NULL,
                generation BIGINT NOT NULL,
                PRIMARY KEY (guild_id, model)
            )
            """,
            "CREATE TABLE guild_settings (guild_id BIGINT PRIMARY KEY, settings JSONB NOT NULL)",
            """
            CREATE TABLE opt_outs (
                guild_id BIGINT NOT NULL,
                user_id BIGINT NOT NULL,
                PRIMARY KEY (guild_id, user_id)
            )
            """,
            "CREATE TABLE message_tombstones (message_id BIGINT PRIMARY KEY, deleted_at DOUBLE PRECISION NOT NULL)",
            "CREATE INDEX message_tombstones_deleted_at ON message_tombstones (deleted_at)",
        ),
    ),
    Migration(
        # Messages stored before their vector exists (pending_vectors.py on the SQLite side says why).
        "0002_pending_vectors",
        (
            """
            CREATE TABLE pending_vectors (
                message_rowid BIGINT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
                guild_id BIGINT NOT NULL,
                rejected_at DOUBLE PRECISION,
                error TEXT
            )
            """,
            """
            CREATE INDEX pending_vectors_waiting ON pending_vectors (guild_id, message_rowid)
            WHERE rejected_at IS NULL
            """,
        ),
    ),
    Migration(
        # How far each channel's history has been read again (history.py): the catch-up after a gateway session
        # began, and /memory backfill in both directions.
        "0003_history_progress",
        (
            """
            CREATE TABLE catchup_progress (
                channel_id BIGINT PRIMARY KEY,
                guild_id BIGINT NOT NULL,
                parent_channel_id BIGINT,
                position BIGINT NOT NULL,
                anchor BIGINT NOT NULL,
                read BIGINT NOT NULL DEFAULT 0,
                added BIGINT NOT NULL DEFAULT 0,
                edited BIGINT NOT NULL DEFAULT 0,
                deleted BIGINT NOT NULL DEFAULT 0,
                finished BOOLEAN NOT NULL DEFAULT FALSE,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
            "CREATE INDEX catchup_progress_guild ON catchup_progress (guild_id, parent_channel_id)",
            """
            CREATE TABLE backfill_progress (
                channel_id BIGINT PRIMARY KEY,
                guild_id BIGINT NOT NULL,
                parent_channel_id BIGINT,
                oldest_id BIGINT,
                newest_id BIGINT,
                reached_start BOOLEAN NOT NULL DEFAULT FALSE,
                updated_at DOUBLE PRECISION NOT NULL
            )
            """,
            "CREATE INDEX backfill_progress_guild ON backfill_progress (guild_id, parent_channel_id)",
            # A backfill used to keep only the oldest message it had read, in the guild's settings (copied here from
            # SQLite by `migrate`): from here it reads on forward from that message, and back before it.
            """
            INSERT INTO backfill_progress (channel_id, guild_id, oldest_id, newest_id, updated_at)
            SELECT progress.key::bigint, settings.guild_id, progress.value::bigint, progress.value::bigint,
                   extract(epoch FROM now())
            FROM guild_settings AS settings, jsonb_each_text(settings.settings -> 'backfill_progress') AS progress
            """,
            # What reading history again must never store (history.Exclusion); capture off now: off from the start.
            """
            CREATE TABLE history_exclusions (
                guild_id BIGINT,
                channel_id BIGINT,
                author_id BIGINT,
                message_id BIGINT,
                since DOUBLE PRECISION NOT NULL DEFAULT 0,
                until DOUBLE PRECISION
            )
            """,
            "CREATE INDEX history_exclusions_guild ON history_exclusions (guild_id)",
            """
            INSERT INTO history_exclusions (guild_id, channel_id)
            SELECT settings.guild_id, disabled::bigint
            FROM guild_settings AS settings,
                 jsonb_array_elements_text(settings.settings -> 'capture_disabled_channel_ids') AS disabled
            """,
        ),
    ),
    Migration(
        # A stored vector is the mean of two unit vectors (vectors.py), not unit length itself: search ranks by
        # inner product, and the HNSW index must serve that operator. The input form's new key re-embeds every
        # message in the background, so the old cosine-ordered vectors are dropped, not carried over.
        "0004_inner_product",
        (
            "DROP INDEX IF EXISTS embeddings_vector",
            "CREATE INDEX embeddings_vector ON embeddings USING hnsw (vector vector_ip_ops)",
        ),
    ),
    # Search looks up the replies (Discord's reply) to a question, as on SQLite (migrations.py, 0009_replies).
    Migration("0005_replies", (CREATE_REPLY_INDEX,)),
    Migration(
        # The erasure ledger's entries this database has applied, by any process (privacy/ledger.py, SQLite's
        # 0010_erasures): each process copies those its own ledger file lacks, and applies those the table lacks.
        "0006_erasures",
        ("CREATE TABLE erasures (id TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL, entry TEXT NOT NULL)",),
    ),
    Migration(
        # Guilds' and channels' names as last seen, as on SQLite (migrations.py, 0011_place_names).
        "0007_place_names",
        ("""
         CREATE TABLE place_names (
             guild_id BIGINT NOT NULL,
             kind TEXT NOT NULL CHECK (kind IN ('guild', 'channel')),
             id BIGINT NOT NULL,
             name TEXT NOT NULL,
             parent_id BIGINT,
             seen_at DOUBLE PRECISION NOT NULL,
             PRIMARY KEY (guild_id, kind, id)
         )
         """,),
    ),
    # Vectors that quote the message before them, as on SQLite (store/migration.py, migrations.py's 0012).
    Migration("0008_vectors_of_the_message_alone", (DELETE_VECTORS_OF_EARLIER_FORMS,)),
    # The dashboards' Performance figures by the minute, as on SQLite (migrations.py's 0013).
    Migration(
        "0009_performance_minutes",
        ("CREATE TABLE performance_minutes (origin TEXT NOT NULL, minute DOUBLE PRECISION NOT NULL, "
         "figures TEXT NOT NULL, PRIMARY KEY (origin, minute))",),
    ),
    Migration(
        # The quotation log and each member's last export, as on SQLite (migrations.py, 0014_member_records).
        "0010_member_records",
        ("""
         CREATE TABLE quotations (
             message_id BIGINT NOT NULL REFERENCES messages (message_id) ON DELETE CASCADE,
             guild_id BIGINT NOT NULL,
             author_id BIGINT NOT NULL,
             channel_id BIGINT NOT NULL,
             quoted_at DOUBLE PRECISION NOT NULL,
             kind TEXT NOT NULL CHECK (kind IN ('answer', 'auto', 'llm', 'search')),
             answer_channel_id BIGINT,
             answer_message_id BIGINT
         )
         """,
         "CREATE INDEX quotations_member ON quotations (guild_id, author_id, quoted_at)",
         "CREATE INDEX quotations_message ON quotations (message_id)",
         "CREATE INDEX quotations_guild_time ON quotations (guild_id, quoted_at)",
         """
         CREATE TABLE member_exports (
             guild_id BIGINT NOT NULL,
             user_id BIGINT NOT NULL,
             exported_at DOUBLE PRECISION NOT NULL,
             PRIMARY KEY (guild_id, user_id)
         )
         """),
    ),
)


async def apply_migrations(conn: asyncpg.Connection) -> list[str]:
    """Apply every migration the database has not recorded, in order; returns the names this call applied.

    The advisory lock makes processes starting together take turns: the first applies, the others find the
    migrations recorded and apply nothing. A database that records a migration this bot does not know (a newer bot
    set it up) raises ``StoreOpenError``: this bot would not know what its tables mean.
    """
    await conn.execute(LOCK, MIGRATION_LOCK_KEY)
    try:
        await conn.execute(CREATE_SCHEMA_MIGRATIONS)
        applied = {row[0] for row in await conn.fetch(SELECT_APPLIED)}
        unknown = applied - {migration.name for migration in MIGRATIONS}
        if unknown:
            raise StoreOpenError(f"the PostgreSQL database was set up by a newer version of the bot (migration "
                                 f"{', '.join(sorted(unknown))}); update the bot, or point DATABASE_URL to another "
                                 "database")
        newly_applied: list[str] = []
        for migration in MIGRATIONS:
            if migration.name in applied:
                continue
            async with conn.transaction():
                for statement in migration.statements:
                    await conn.execute(statement)
                await conn.execute(INSERT_APPLIED, migration.name, time.time())
            log.info("Applied database migration %s", migration.name)
            newly_applied.append(migration.name)
        return newly_applied
    finally:
        await conn.execute(UNLOCK, MIGRATION_LOCK_KEY)
