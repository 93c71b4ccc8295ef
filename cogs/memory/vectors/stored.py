"""Stored vectors: what a message's one vector is made of, computed the same way by ingest, the vector filler and
every re-embed.

A message is embedded alone. Until issue 25 the stored vector was the mean of the message alone and after the
previous message in its channel: that helps where two people take turns and an answer follows its question (LoCoMo,
vector R@10 +0.036), and costs where people write in bursts and topics interleave (discord hybrid MRR@10 -0.042,
longchat vector MRR@10 -0.043; on real multi-party chats kept apart from the project the message alone was better
too). A vector is made at ingest, before the channel's structure is known, so it cannot read the channel the way
the first stage's rules do (search/structure.py); the neighbour spread and the question's loan carry the context
instead. Measured in docs/recall-fixtures.md. ``texts`` may give more than one form (the benchmark's ``mean`` form,
bench/ablation.py, puts the predecessor back): the stored vector is then their mean, scored by inner product.
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
    """A message as its vector sees it: author, stored content, and the previous message's (author, content), which
    only the benchmark's ``mean`` form reads (bench/ablation.py). The vector filler and reembed_all read it from the
    store with each message, so that form's fresh ingest is exact; an edit passes None, and neither an edit nor a
    delete embeds the next message again (ingest/queue.py): no vector the core stores reads another message."""

    author_name: str
    content: str
    previous: tuple[str, str] | None

    def texts(self) -> list[str]:
        """What the model reads for it: the message alone."""
        return [text.embedding_input(self.author_name, self.content, None)]


def _texts(sources: Sequence[VectorSource]) -> tuple[list[str], list[int]]:
    """Every text to embed (each message's first form, then the second forms), and the positions that have one."""
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
    """The vector stored for each source: its embedding alone (the mean of its forms where ``texts`` gives two);
    one row each. All forms go to the model in one call, so it batches them by length together. Raises ValueError
    when the model gives too few vectors.
    """
    texts, with_context = _texts(sources)
    embedded = np.asarray(await embedder.embed(texts), dtype=np.float32)
    if len(embedded) != len(texts):
        raise ValueError(f"the model gave {len(embedded)} vectors for {len(texts)} texts")
    vectors = embedded[: len(sources)].copy()
    if with_context:
        vectors[with_context] = (vectors[with_context] + embedded[len(sources):]) / 2.0
    return vectors
