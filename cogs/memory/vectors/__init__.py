"""Vectors: the embedding model on its worker thread and its fast query paths (embedding, query_trace, query_onnx),
what a message's stored vector is made of (stored), and the per-guild FAISS index with its HNSW graph and file
format (index, hnsw, files).

May import: ``language`` and ``runtime``; never a store (``index.EmbeddingSource`` says what it reads of one).
"""
