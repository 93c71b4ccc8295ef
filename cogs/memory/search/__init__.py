"""First-stage retrieval, dialect-free, one idea a module: each side's hits standardised and fused (fusion), the window
of rows around the strongest sources and who neighbours whom in it (context), what each message lends its neighbours,
a question its answers and Discord replies (loans), and the search that runs them and ranks the passing rows
(first_stage: ``FirstStage``, which each store's engine extends). Every weight and budget is in the profile's
``RankingTuning`` (runtime/ranking.py; measured in docs/ranking.md). The keyword side's terms and IDF both stores
pick and weigh alike (terms). How much the context rules lend in a channel is read from its own messages
(structure). The people, channels and times a question names boost what answers them (named). Each store's
engine supplies the look-ups (store/sqlite/search.py, store/postgres/search.py).
The second stage's order too: candidates merged with the reranker's scores for their texts (second_stage).
timed_cache: a value per key kept a while, concurrent misses sharing one load (the channels' structures here,
PostgreSQL's guild stats in store/postgres/bm25.py).

May import: ``records``, ``language``, ``vectors``, ``runtime`` and ``store.rows``; it holds no SQL.
"""
