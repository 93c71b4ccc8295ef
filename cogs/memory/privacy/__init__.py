"""Privacy rules that hold on every path: who and what may be stored (``admission``), and the erasure ledger that
keeps every forget in force through restores (``ledger``). Imports the records, settings and the store protocols;
nothing of Discord, no SQL of its own (the stores hold it)."""
