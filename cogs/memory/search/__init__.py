"""First-stage retrieval, dialect-free: each side's hits fused by standardised scores, widened to channel
neighbours, ranked (first_stage), with every weight and budget in the profile's ``RankingTuning`` (runtime/ranking.py;
measured in docs/ranking.md). How much the context rules lend in a channel is read from its own messages (structure).
Each store's engine supplies the look-ups (store/sqlite/search.py, store/postgres/search.py).
The second stage's order too: candidates merged with the reranker's scores for their texts (second_stage).
timed_cache: a value per key kept a while, concurrent misses sharing one load (the channels' structures here,
PostgreSQL's guild stats in store/postgres/bm25.py).

May import: ``records``, ``language``, ``vectors``, ``runtime`` and ``store.rows``; it holds no SQL.
"""
