"""Second-stage scores for (query, text) pairs, as a cross-encoder gives them: the service, and its local (Qwen3 or
cross-encoder, on torch or ONNX Runtime: scorers) and HTTP providers. The candidates stay in the core
(search/second_stage.py orders them by these scores).

May import: ``runtime``; it knows nothing of candidates, stores, vectors or Discord.
"""
