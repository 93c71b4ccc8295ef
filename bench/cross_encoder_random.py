"""Random-weight XLM-RoBERTa cross-encoders (XLMRobertaForSequenceClassification, one logit) of a real reranker's
exact shape, or tiny, saved with a real tokenizer so `from_pretrained` loads them like a downloaded model."""

from __future__ import annotations

from pathlib import Path

import torch

# XLM-R's sentencepiece vocabulary; with another tokenizer only the ids below its own size are ever looked up.
XLM_R_VOCAB = 250002
SHAPES: dict[str, dict[str, int]] = {
    # cross-encoder/mmarco-mMiniLMv2-L12-H384-v1: multilingual MiniLMv2 fine-tuned on mMARCO (14 languages).
    "mmarco-mMiniLMv2-L12-H384": dict(vocab_size=XLM_R_VOCAB, hidden_size=384, num_hidden_layers=12,
                                      num_attention_heads=12, intermediate_size=1536, max_position_embeddings=514),
    # BAAI/bge-reranker-base: XLM-RoBERTa base, trained for English and Chinese.
    "bge-reranker-base": dict(vocab_size=XLM_R_VOCAB, hidden_size=768, num_hidden_layers=12,
                              num_attention_heads=12, intermediate_size=3072, max_position_embeddings=514),
    # For tests: the same architecture, small enough to build in a fraction of a second.
    "tiny": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                 max_position_embeddings=514),
}


def build_random_cross_encoder(target: Path, shape: str, tokenizer_dir: Path, *, seed: int = 0,
                               initializer_range: float = 0.02) -> Path:
    """Save a random XLMRobertaForSequenceClassification of `SHAPES[shape]` plus the tokenizer in `tokenizer_dir`
    into `target`. Shapes without a vocabulary size take the tokenizer's."""
    from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    sizes = {"vocab_size": len(tokenizer), **SHAPES[shape]}
    # XLM-R numbers positions after its padding id, which must be below max_position_embeddings: a tokenizer whose
    # pad id is larger (Qwen3's) keeps XLM-R's own (1); its pads are masked out of attention either way.
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id < sizes["max_position_embeddings"] else 1
    # XLM-R's tokenizer gives no segment ids (one type); a BERT tokenizer marks the document with type 1.
    types = 2 if "token_type_ids" in tokenizer.model_input_names else 1
    config = XLMRobertaConfig(**sizes, type_vocab_size=types, num_labels=1, layer_norm_eps=1e-5, pad_token_id=pad,
                              initializer_range=initializer_range)
    config.architectures = ["XLMRobertaForSequenceClassification"]
    torch.manual_seed(seed)
    XLMRobertaForSequenceClassification(config).eval().save_pretrained(target)
    tokenizer.save_pretrained(target)
    return target
