"""Second-stage reranking of recall candidates: the service, and its local (Qwen3) and HTTP backends."""
