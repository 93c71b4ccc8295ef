"""The SQLite store, the source of truth by default: the store and its write path (store, write), read-only
connections (readers), migrations, integrity checks, the process lock, backups and restores (snapshot, backup,
restore, its journal, the erasures a restore holds for the next open), the messages waiting for a vector
(pending), filters as SQL, erasing what was forgotten (purge), the history ledger, guilds' and channels' names
(names), the FTS5 + FAISS first stage (search), and the backend Memory receives (backend).

May import: the shared ``store`` modules, ``records``, ``language``, ``vectors``, ``runtime.private_files`` and
``search``; never ``postgres``.
"""
