"""The PostgreSQL + pgvector store, for memories shared by several bot processes (DATABASE_URL=postgresql://...):
the store, its schema and migrations, full-text documents (fts), filters, the messages waiting for a vector, the
history ledger, guilds' and channels' names (names), the pgvector + tsvector first stage, the copy from SQLite
(migrate), and its backend.

May import: the shared ``store`` modules, ``records``, ``language``, ``vectors`` and ``search``; never ``sqlite``.
"""
