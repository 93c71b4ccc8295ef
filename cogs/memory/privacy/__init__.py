"""Privacy rules that hold on every path: who and what may be stored (``admission``), and the erasure ledger that
keeps every forget in force through restores (``ledger``), and when a forget's text is erased from the store's files
(``purge_schedule``). Imports the records, settings and the store protocols;
nothing of Discord, no SQL of its own (the stores hold it)."""
