"""The stores, side by side: SQLite (sqlite/, the default) and PostgreSQL + pgvector (postgres/). What both share
lives here: the protocols (protocol: a role Protocol per user of a store, ``Store`` their union, ``VectorIndexes``,
``SearchEngine`` and ``StoreBackend``), the rows ingest writes and reads (rows), what memory holds of one member (member_rows), the history records (history), a
migration (migration), the neighbour SQL (neighbours), and the choice of backend (backend). Only the store packages
hold SQL.

May import: ``records``, ``language``, ``vectors``, ``runtime`` (a profile and its ranking tuning, ``private_files``:
files made 0600) and, from ``search``, ``first_stage`` (each store's engine extends it), ``fusion`` (a side's hits),
``context`` (the window of neighbour rows) and ``terms`` (the keyword side's terms and IDF); ``sqlite/`` and
``postgres/`` never import each other.
"""
