"""The message-alone baseline of ``bench.recall --mode alone``: each message embedded by itself, ranked by cosine.

This is what the vector side must not fall below: the embedding model reading each message on its own, and nothing
else. No previous message in the vector, no neighbour lending its score, no question rule, no index: the cosine of the
query with each message of the query's channel, best first. It reads the same text as the alone half of a stored
vector (``text.embedding_input`` with no previous message) and the same query text, through the same model, so the
difference to ``--mode vector`` is exactly what the stored vector and the search add to the message alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from cogs.memory.language import keywords as text
from cogs.memory.vectors.embedding import EmbeddingService
from cogs.memory.records import MessageRecord


class AloneBaseline:
    """Every message's alone vector, grouped by channel, and a search over one channel."""

    def __init__(self, embedder: EmbeddingService, ids: dict[int, np.ndarray], vectors: dict[int, np.ndarray]) -> None:
        self._embedder = embedder
        self._ids = ids
        self._vectors = vectors

    @classmethod
    async def build(cls, embedder: EmbeddingService, records: Sequence[MessageRecord]) -> AloneBaseline:
        """Embed each record alone, as the model's passage; ``records`` are the messages ingest stored."""
        embedded = np.asarray(await embedder.embed(
            [text.embedding_input(record.author_name, record.content, None) for record in records]), dtype=np.float32)
        rows: dict[int, list[int]] = defaultdict(list)
        for position, record in enumerate(records):
            rows[record.channel_id].append(position)
        ids = {channel: np.array([records[i].message_id for i in positions]) for channel, positions in rows.items()}
        vectors = {channel: embedded[positions] for channel, positions in rows.items()}
        return cls(embedder, ids, vectors)

    async def search(self, query: str, channel_id: int, limit: int) -> list[int]:
        """The message ids of ``channel_id`` nearest ``query`` by cosine, best first (ties: earlier first)."""
        if channel_id not in self._ids:
            return []
        query_vector = np.asarray(await self._embedder.embed_queries([text.embedding_query(query)]))[0]
        scores = self._vectors[channel_id] @ query_vector  # unit rows and a unit query: the cosine
        order = np.argsort(-scores, kind="stable")[:limit]
        return [int(message_id) for message_id in self._ids[channel_id][order]]
