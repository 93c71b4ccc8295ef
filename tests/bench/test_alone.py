"""The message-alone baseline: each message read by itself, ranked by cosine within the query's channel only."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from bench.alone import AloneBaseline
from cogs.memory.records import MessageRecord

# A text's vector: its first word's axis, so a query ranks the messages that share its first word first.
AXES = {"cat": 0, "dog": 1, "ann:": 2, "ben:": 3}


def unit(words: str) -> np.ndarray:
    vector = np.full(4, 0.01, dtype=np.float32)
    for word in words.lower().split():
        if word in AXES:
            vector[AXES[word]] += 1.0
    return vector / np.linalg.norm(vector)


class WordEmbedder:
    """Stands in for EmbeddingService: records what it reads, embeds by the words it knows."""

    def __init__(self) -> None:
        self.passages: list[str] = []

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.passages.extend(texts)
        return np.stack([unit(t) for t in texts])

    async def embed_queries(self, queries: Sequence[str]) -> np.ndarray:
        return np.stack([unit(q) for q in queries])


def record(message_id: int, channel_id: int, author: str, content: str) -> MessageRecord:
    return MessageRecord(message_id=message_id, guild_id=1, channel_id=channel_id, parent_channel_id=None,
                         author_id=message_id, author_name=author, content=content,
                         created_at=datetime(2024, 1, 1, tzinfo=UTC))


RECORDS = [record(1, 10, "Ann", "my dog barks"), record(2, 10, "Ben", "a cat sat"), record(3, 10, "Ann", "cat cat"),
           record(4, 20, "Ben", "cat cat cat")]


async def test_each_message_is_read_alone_and_ranked_by_cosine_in_its_channel() -> None:
    embedder = WordEmbedder()
    baseline = await AloneBaseline.build(embedder, RECORDS)  # type: ignore[arg-type]
    # No previous message in any text: each is its author and its own words.
    assert embedder.passages == ["Ann: my dog barks", "Ben: a cat sat", "Ann: cat cat", "Ben: cat cat cat"]
    # Message 4 matches best but is in another channel; message 1 is a dog.
    assert await baseline.search("cat", 10, 50) == [3, 2, 1]
    assert await baseline.search("dog", 10, 1) == [1]
    assert await baseline.search("cat", 20, 50) == [4]
    assert await baseline.search("cat", 30, 50) == []
