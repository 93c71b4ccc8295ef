"""One lock around every model load in the process: transformers' ``from_pretrained`` is not thread-safe."""

from __future__ import annotations

import threading

__all__ = ("MODEL_LOADING",)

# While it builds a model, from_pretrained swaps process-wide torch state: the default dtype, torch.nn.init's
# functions, a meta-device context. Two loads on two threads at once (a live profile switch loading MiniLM while
# the reranker loads) can leave one model with meta or uninitialised weights ("Cannot copy out of meta tensor").
MODEL_LOADING = threading.Lock()
