"""Privacy rules that hold on every path: who and what may be stored (``admission``); every erasure (forget, delete on
Discord, opt-out or opt-in, capture switch) recorded and kept in force through restores (``erasures``), in the
erasure ledger's file (``ledger``, the format alone) and the database's own record, which ``known`` merges (at open,
and for a restore); and when a forget's text is erased from the store's files (``purge_schedule``). What a member may see and take of what
memory holds of them (``subject_access``, ``member_export`` with ``export_parts``, its files), and where their
messages were quoted (``quotations``, the quotation log).

May import: the records, ``guild_policy`` and the store's protocols and records (``store.protocol``,
``store.history``, ``store.rows``); the other parts ``erasures`` needs (the ingest queue, history, names, the guild
policy) it sees through Protocols of its own; ``known`` alone reads a closed SQLite file (one a restore replaces,
or what a restore left to apply) through ``store.sqlite.restore_erasures``. Nothing of Discord, never ``memory.py``
(the facade builds these), no SQL of its own (the stores hold it).
"""
