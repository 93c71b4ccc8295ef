"""The PostgreSQL + pgvector store, for memories shared by several bot processes (DATABASE_URL=postgresql://...)."""
