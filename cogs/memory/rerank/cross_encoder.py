"""Classic cross-encoders (a sequence classifier over the pair, e.g. BAAI/bge-reranker-base or an MS MARCO
MiniLM cross-encoder): far cheaper than a 0.6B LM reranker, scored into the same rerank_score in [0, 1]."""

from __future__ import annotations

import logging
import time
from typing import Any

import torch

from ..runtime.workers import MODEL_LOADING
from .local import TORCH_DTYPES, load_tokenizer

log = logging.getLogger(__name__)

# Candidates are taken in first-stage order in windows of this many batches and sorted by length inside, so a
# deadline still cuts the list at (roughly) a first-stage prefix while batches pad little.
WINDOW_BATCHES = 4


class CrossEncoderScorer:
    """A `...ForSequenceClassification` model with one logit (sigmoid) or two labels (softmax, label 1 = relevant).

    It takes no instruction: one is accepted and ignored, so the service calls every local scorer the same way.
    """

    backend = "torch"

    def __init__(self, model_name: str, device: str, dtype: str, max_length: int, tokenizer: Any = None) -> None:
        from transformers import AutoModelForSequenceClassification

        self.tokenizer = load_tokenizer(model_name) if tokenizer is None else tokenizer
        with MODEL_LOADING:
            model = AutoModelForSequenceClassification.from_pretrained(model_name, dtype=TORCH_DTYPES[dtype])
        self.model = model.to(device).eval()
        self.model_name, self.device, self.dtype = model_name, device, dtype
        self.num_labels = self.model.config.num_labels
        if self.num_labels not in (1, 2):
            raise ValueError(f"{model_name}: a cross-encoder needs 1 or 2 labels, this one has {self.num_labels}")
        limit = getattr(self.model.config, "max_position_embeddings", None) or max_length
        self.max_length = min(max_length, limit, self.tokenizer.model_max_length)

    @torch.inference_mode()
    def forward_pairs(self, query: str, docs: list[str]) -> list[float]:
        """Relevance in [0, 1] for each (query, doc), in one padded batch."""
        inputs = self.tokenizer([query] * len(docs), docs, padding=True, truncation=True,
                                max_length=self.max_length, return_tensors="pt").to(self.device)
        logits = self.model(**inputs).logits.float()
        if self.num_labels == 1:
            return torch.sigmoid(logits[:, 0]).tolist()
        return torch.softmax(logits, dim=-1)[:, 1].tolist()

    def score(self, query: str, docs: list[str], instruction: str | None, batch_size: int,
              deadline: float | None = None) -> list[float | None]:
        """Scores in first-stage order; None for docs left when the deadline passed or OOM at batch size 1."""
        scores: list[float | None] = [None] * len(docs)
        lengths = [len(doc) for doc in docs]
        window = batch_size * WINDOW_BATCHES
        for start in range(0, len(docs), window):
            pending = sorted(range(start, min(start + window, len(docs))), key=lambda i: lengths[i])
            while pending:
                if deadline is not None and time.monotonic() >= deadline:
                    return scores
                chunk = pending[:batch_size]
                try:
                    values = self.forward_pairs(query, [docs[i] for i in chunk])
                except torch.OutOfMemoryError:
                    if batch_size == 1:
                        log.warning("cross-encoder out of memory at batch size 1; %d candidates keep first-stage "
                                    "order", sum(s is None for s in scores))
                        return scores
                    batch_size = max(1, batch_size // 2)
                    log.warning("cross-encoder out of memory; batch size halved to %d", batch_size)
                    continue
                for i, value in zip(chunk, values, strict=True):
                    scores[i] = value
                pending = pending[len(chunk):]
        return scores

    def close(self) -> None:
        del self.model
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
