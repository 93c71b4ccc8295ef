"""DatabaseIndexes beside PostgreSQL: what a VectorIndexes caller asks of the vectors pgvector keeps, answered from
the database (a guild's nearest rows, best first, among the allowed ones), shaped as FAISS answers it."""

from __future__ import annotations

import numpy as np

from cogs.memory.store.postgres.indexes import DatabaseIndexes
from cogs.memory.store.postgres.store import PostgresStore
from tests.fixtures.core import RecordFactory
from tests.fixtures.stores import DIMENSION, MODEL, insert, unit


async def stored(pg_store: PostgresStore, make_record: RecordFactory) -> dict[int, int]:
    """Messages 1-6 in guild 1 and 7 in guild 2, each with the vector ``unit(message_id)``: message id → row id."""
    records = [make_record(i, f"message {i}") for i in range(1, 7)] + [make_record(7, "elsewhere", guild_id=2)]
    return dict(zip(range(1, 8), await insert(pg_store, *records), strict=True))


async def test_a_search_gives_the_guilds_nearest_rows_best_first(pg_store: PostgresStore,
                                                                   make_record: RecordFactory) -> None:
    rowids = await stored(pg_store, make_record)
    near = unit(3) + 0.5 * unit(5) + 0.5 * unit(7)
    nearest = sorted(range(1, 7), key=lambda i: -float(unit(i) @ near))[:4]
    scores, ids = await DatabaseIndexes(pg_store, MODEL, DIMENSION).search(1, near, 4)
    assert ids.tolist() == [[rowids[i] for i in nearest]]
    np.testing.assert_allclose(scores[0], [float(unit(i) @ near) for i in nearest], rtol=1e-5)


async def test_a_search_among_allowed_rows_pads_what_it_lacks(pg_store: PostgresStore,
                                                                make_record: RecordFactory) -> None:
    rowids = await stored(pg_store, make_record)
    allowed = np.array([rowids[2], rowids[7]])  # 7 is another guild's: never an answer for guild 1
    scores, ids = await DatabaseIndexes(pg_store, MODEL, DIMENSION).search(1, np.stack([unit(1), unit(2)]), 3,
                                                                           allowed)
    assert ids.tolist() == [[rowids[2], -1, -1], [rowids[2], -1, -1]]
    assert np.isneginf(scores[:, 1:]).all() and np.isfinite(scores[:, 0]).all()
