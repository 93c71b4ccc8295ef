"""Stored vectors: what a message's one vector is made of, computed the same way by ingest, the vector filler and
every re-embed.

A message is embedded twice: alone, and after the previous message in its channel (as context). The stored vector
is the mean of the two, so its inner product with a query is the mean of the two cosines: each reading of the
message votes alike. Context finds an answer given as the reply to a question ("where do you work?" / "at Ridgeway
Cycles"); in chat where turns switch topic or answer something said further up, the previous message is noise, and
the message alone is what matches. Stored vectors are therefore not unit length (between about 0.7 and 1), and every
vector search scores by inner product, never by cosine. The normalised sum, stored before, is the same direction
scaled by 2 / |alone + in context|, which ranks higher the messages whose two readings disagree most, for no reason
(measured in README, "The vector side: each message alone, after the previous one, or both").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..language import keywords as text

if TYPE_CHECKING:
    from .embedding import Embedder

__all__ = ("VectorSource", "stored_vectors")

# Whenever ``stored_vectors`` computes something else, change embedding.INPUT_FORM: it is part of the key vectors
# are stored under, so every stored vector is then embedded again in the background.


@dataclass(frozen=True, slots=True)
class VectorSource:
    """A message as its vector sees it: author, stored content, and the previous message's (author, content)."""

    author_name: str
    content: str
    previous: tuple[str, str] | None

    def texts(self) -> list[str]:
        """What the model reads for it: the message alone, then after its predecessor (when it has one)."""
        alone = text.embedding_input(self.author_name, self.content, None)
        if self.previous is None:
            return [alone]
        return [alone, text.embedding_input(self.author_name, self.content, self.previous)]


def _texts(sources: Sequence[VectorSource]) -> tuple[list[str], list[int]]:
    """Every text to embed (each message alone first, then in context), and the positions that have a context."""
    alone: list[str] = []
    in_context: list[str] = []
    with_context: list[int] = []
    for i, source in enumerate(sources):
        forms = source.texts()
        alone.append(forms[0])
        if len(forms) > 1:
            in_context.append(forms[1])
            with_context.append(i)
    return alone + in_context, with_context


async def stored_vectors(embedder: Embedder, sources: Sequence[VectorSource]) -> np.ndarray:
    """The vector stored for each source: the mean of its alone and in-context embeddings; one row each.

    A message with no previous one (a channel's first) has one form, embedded once, stored as it is. Both forms go to
    the model in one call, so it batches them by length together. Raises ValueError when the model gives too few
    vectors.
    """
    texts, with_context = _texts(sources)
    embedded = np.asarray(await embedder.embed(texts), dtype=np.float32)
    if len(embedded) != len(texts):
        raise ValueError(f"the model gave {len(embedded)} vectors for {len(texts)} texts")
    vectors = embedded[: len(sources)].copy()
    if with_context:
        vectors[with_context] = (vectors[with_context] + embedded[len(sources):]) / 2.0
    return vectors
