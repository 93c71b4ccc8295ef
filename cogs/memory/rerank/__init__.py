"""Second-stage reranking of recall candidates: the service, and its local (Qwen3 or cross-encoder, on torch or ONNX
Runtime: scorers) and HTTP providers.

May import: ``records`` and ``runtime``; it knows nothing of stores, vectors or Discord.
"""
