"""Local Qwen3-Reranker scoring (transformers): the official prompt and score, computed with a shared-prefix KV
cache, candidates packed without padding, and only the "yes"/"no" rows of the output head."""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F

from ..runtime.config import DTYPES
from ..runtime.workers import MODEL_LOADING
from .prefix import ConstantPrefixCache

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger(__name__)

SYSTEM_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
PROMPT_BODY = "<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}"
ASSISTANT_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
DEFAULT_INSTRUCTION = (
    "Given a member's message in a chat server, judge whether this past chat message "
    "helps to recall what the member is referring to or to answer it"
)
YES_TOKEN, NO_TOKEN = "yes", "no"
TORCH_DTYPES = {name: getattr(torch, name) for name in DTYPES}
# How much the newest forward counts in the learned seconds per token (the rest is the running estimate).
SPEED_WEIGHT = 0.5
# A packed forward attends over its whole pack (the block mask hides, but does not skip, other candidates). On a CPU
# packs stop near the size where the GEMMs are already efficient. On a GPU a forward of the 0.6B model costs about
# the same from 64 to 1,024 tokens (kernel launches, not arithmetic, measured on an H100), so there packs grow up to
# the profile's batch_size candidates.
MAX_PACK_TOKENS = {"cpu": 384, "accelerator": 8192}
# Each layer's (keys, values) of a KV cache: torch tensors here, numpy arrays in OnnxScorer, which replaces every
# method that reads them.
KV = list[tuple[Any, Any]]


@dataclass(frozen=True, slots=True)
class PairTokens:
    """One query's prompts split at the token where they start to differ: `shared` once, then each `tails[i]`."""

    shared: list[int]
    tails: list[list[int]]


def _common_prefix_length(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _pack_layout(
    prefix_len: int, lengths: list[int], device: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For tails packed into one row after a `prefix_len` prefix: the attention mask (each token sees the prefix
    and the earlier tokens of its own tail), each token's position (its tail continues the prefix) and the index
    of each tail's last token. Built with whole-tensor operations on `device`: a loop of per-tail blocks costs more
    than the forward itself on a GPU."""
    sizes = torch.tensor(lengths, device=device)
    ends = torch.cumsum(sizes, 0)
    tail_of = torch.repeat_interleave(torch.arange(len(lengths), device=device), sizes)
    index = torch.arange(sum(lengths), device=device)
    positions = prefix_len + index - (ends - sizes)[tail_of]
    own = (tail_of[:, None] == tail_of[None, :]) & (index[None, :] <= index[:, None])
    seen = torch.ones((len(index), prefix_len), dtype=torch.bool, device=device)
    return torch.cat([seen, own], dim=1), positions, ends - 1


def load_tokenizer(model_name: str) -> Any:
    """`model_name`'s tokenizer. Parsing a large tokenizer file holds the GIL throughout (Qwen3's 11 MB: 300 ms and
    more here), so the service does it while memory opens, before members' messages are served."""
    from transformers import AutoTokenizer

    with MODEL_LOADING:
        return AutoTokenizer.from_pretrained(model_name)


class LocalScorer:
    """A Qwen3-Reranker (or any Qwen3ForCausalLM with yes/no tokens) loaded with `from_pretrained`.

    Owned by one thread (the service's worker); nothing here is thread-safe on purpose. The model runs in two
    places a subclass can replace (the ONNX Runtime backend does): `_extend_kv` and `forward_tails`.
    """

    backend = "torch"

    def __init__(self, model_name: str, device: str, dtype: str, max_length: int, tokenizer: Any = None) -> None:
        from transformers import AutoModelForCausalLM

        if tokenizer is None:
            tokenizer = load_tokenizer(model_name)
        with MODEL_LOADING:
            model = AutoModelForCausalLM.from_pretrained(model_name, dtype=TORCH_DTYPES[dtype])
        self._init_prompts(model_name, tokenizer, device, dtype, max_length)
        # transformers wraps `to` in functools.wraps(Module.to), which mypy reads as a function still taking self.
        self.model = model.to(device).eval()  # type: ignore[arg-type]
        # Only these two rows of the 151k-word head are ever needed: [no, yes] so log_softmax[:, 1] = log P(yes).
        head = self.model.get_output_embeddings().weight
        self.head_rows = head[[self.no_id, self.yes_id]].detach().clone()

    def _init_prompts(self, model_name: str, tokenizer: PreTrainedTokenizerBase, device: str, dtype: str,
                      max_length: int) -> None:
        """Everything but the model: tokenizer, prompt constants, the yes/no ids and the constant-prefix cache."""
        self.model_name, self.device, self.dtype, self.max_length = model_name, device, dtype, max_length
        self.tokenizer = tokenizer
        self.max_pack_tokens = MAX_PACK_TOKENS["cpu" if device == "cpu" else "accelerator"]
        self.yes_id = self._single_token_id(YES_TOKEN)
        self.no_id = self._single_token_id(NO_TOKEN)
        self.constant_prefixes = ConstantPrefixCache()
        # Seconds per token of the last forwards (None until one ran): a pack that would end past the deadline is
        # cut to what fits, so a budget holds, and a faster machine fits more into the same budget.
        self.seconds_per_token: float | None = None
        self.prefix_ids: list[int] = self.tokenizer.encode(SYSTEM_PREFIX, add_special_tokens=False)
        self.suffix_ids: list[int] = self.tokenizer.encode(ASSISTANT_SUFFIX, add_special_tokens=False)
        self.body_budget = max_length - len(self.prefix_ids) - len(self.suffix_ids)
        if self.body_budget < 1:
            raise ValueError(f"max_length={max_length} leaves no room for the prompt body")

    def _single_token_id(self, token: str) -> int:
        token_id = self.tokenizer.convert_tokens_to_ids(token)
        if not isinstance(token_id, int) or token_id == self.tokenizer.unk_token_id:
            raise ValueError(f"{self.model_name}: tokenizer has no single {token!r} token")
        return token_id

    # --- tokens ------------------------------------------------------------------------------------------------

    def prompt_ids(self, query: str, docs: list[str], instruction: str) -> list[list[int]]:
        """The official full prompt per doc: prefix + body (truncated to the budget) + suffix."""
        bodies = [PROMPT_BODY.format(instruction=instruction, query=query, doc=doc) for doc in docs]
        encoded = self.tokenizer(bodies, add_special_tokens=False)["input_ids"]
        return [self.prefix_ids + ids[: self.body_budget] + self.suffix_ids for ids in encoded]

    def split_prompts(self, query: str, docs: list[str], instruction: str) -> PairTokens:
        """Exact split of the official prompts: the longest prefix common to all of them is shared."""
        prompts = self.prompt_ids(query, docs, instruction)
        shared = len(prompts[0]) - 1
        for ids in prompts[1:]:
            shared = min(shared, _common_prefix_length(prompts[0], ids))
        shared = min(shared, min(len(ids) for ids in prompts) - 1)  # every tail keeps its last (scored) token
        return PairTokens(prompts[0][:shared], [ids[shared:] for ids in prompts])

    def constant_ids(self, instruction: str) -> list[int]:
        """The tokens every prompt with this instruction starts with: system prompt, instruction, "<Query>:"."""
        lead = PROMPT_BODY[: PROMPT_BODY.index(" {query}")].format(instruction=instruction)
        lead_ids: list[int] = self.tokenizer.encode(lead, add_special_tokens=False)
        return self.prefix_ids + lead_ids

    def shared_kv(self, shared: list[int], instruction: str) -> KV:
        """The KV cache of `shared` (one query's common prompt start): the instruction's cached constant part,
        extended by the query's tokens. Only reused where the tokens really match, so scores stay exact."""
        constant = self.constant_ids(instruction)
        if len(shared) < len(constant) or shared[: len(constant)] != constant:
            return self._extend_kv([], shared)
        entry = self.constant_prefixes.get(instruction, constant, lambda ids: self._extend_kv([], ids))
        return self._extend_kv(entry.kv, shared[len(constant):])

    # --- model -------------------------------------------------------------------------------------------------

    def _attention_kernels(self) -> contextlib.AbstractContextManager[None]:
        """On CUDA, attention without cuDNN's kernel: it builds a plan for every new sequence length, and every
        query brings new lengths, so each recall would pay that build (hundreds of ms) again."""
        if not self.device.startswith("cuda"):
            return contextlib.nullcontext()
        from torch.nn.attention import SDPBackend, sdpa_kernel

        return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])

    @torch.inference_mode()
    def _extend_kv(self, past: KV, ids: list[int]) -> KV:
        """The KV cache of (the tokens behind `past`) + `ids`; `past` itself is left as it is."""
        from transformers import DynamicCache

        if not ids:
            return past
        cache = DynamicCache(ddp_cache_data=past) if past else None
        with self._attention_kernels():
            out = self.model.model(input_ids=torch.tensor([ids], device=self.device), past_key_values=cache,
                                   use_cache=True)
        return [(layer.keys, layer.values) for layer in out.past_key_values.layers]

    @torch.inference_mode()
    def forward_tails(self, prefix_kv: KV, tails: list[list[int]]) -> list[float]:
        """P(yes) for each tail after the cached prefix.

        The tails are packed into one row (no padding, the prefix cache is not copied per candidate): a block mask
        lets each tail see the prefix and its own earlier tokens only, and its positions continue the prefix's.
        """
        from transformers import DynamicCache

        prefix_len = prefix_kv[0][0].shape[-2] if prefix_kv else 0
        ids = torch.tensor([[token for tail in tails for token in tail]], device=self.device)
        mask, positions, last = _pack_layout(prefix_len, [len(t) for t in tails], self.device)
        cache = DynamicCache(ddp_cache_data=prefix_kv) if prefix_kv else None
        with self._attention_kernels():
            hidden = self.model.model(
                input_ids=ids, attention_mask=mask[None, None], position_ids=positions[None],
                past_key_values=cache, use_cache=cache is not None,
            ).last_hidden_state
        final = hidden[0, last]
        logits = F.linear(final, self.head_rows).float()
        return torch.log_softmax(logits, dim=-1)[:, 1].exp().tolist()

    # --- scoring -----------------------------------------------------------------------------------------------

    def score(
        self, query: str, docs: list[str], instruction: str, batch_size: int, deadline: float | None = None
    ) -> list[float | None]:
        """P(yes) per doc. Packs are taken in first-stage order, so when the deadline comes the scored docs are a
        first-stage prefix and the rest are None (as are all of them after an OOM at batch size 1)."""
        scores: list[float | None] = [None] * len(docs)
        if not docs:
            return scores
        pairs = self.split_prompts(query, docs, instruction)
        prefix_kv = self.shared_kv(pairs.shared, instruction)
        pending = list(range(len(docs)))
        while pending:
            chunk = self._next_pack(pending, pairs.tails, batch_size, self.max_pack_tokens)
            if deadline is not None:
                chunk = self._fitting(chunk, pairs.tails, deadline - time.monotonic())
                if not chunk:
                    return scores
            started = time.monotonic()
            try:
                values = self.forward_tails(prefix_kv, [pairs.tails[i] for i in chunk])
            except torch.OutOfMemoryError:
                if batch_size == 1:
                    log.warning("reranker out of memory at batch size 1; %d candidates keep first-stage order",
                                sum(s is None for s in scores))
                    return scores
                batch_size = max(1, batch_size // 2)
                log.warning("reranker out of memory; batch size halved to %d", batch_size)
                self._release_cached_memory()
                continue
            self._learn_speed(time.monotonic() - started, sum(len(pairs.tails[i]) for i in chunk))
            for i, value in zip(chunk, values, strict=True):
                scores[i] = value
            pending = pending[len(chunk):]
        return scores

    def warm_up(self, instruction: str) -> None:
        """Before the first recall: compute the instruction's constant prefix, and learn the speed from it."""
        ids = self.constant_ids(instruction)
        started = time.monotonic()
        self.constant_prefixes.get(instruction, ids, lambda constant: self._extend_kv([], constant))
        self._learn_speed(time.monotonic() - started, len(ids))

    def _learn_speed(self, seconds: float, tokens: int) -> None:
        latest = seconds / max(tokens, 1)
        known = self.seconds_per_token
        self.seconds_per_token = latest if known is None else SPEED_WEIGHT * latest + (1 - SPEED_WEIGHT) * known

    def _fitting(self, chunk: list[int], tails: list[list[int]], seconds_left: float) -> list[int]:
        """The longest start of `chunk` expected to finish in `seconds_left` (all of it while the speed is unknown)."""
        if seconds_left <= 0:
            return []
        if self.seconds_per_token is None:
            return chunk
        tokens = end = 0
        while end < len(chunk) and (tokens + len(tails[chunk[end]])) * self.seconds_per_token <= seconds_left:
            tokens += len(tails[chunk[end]])
            end += 1
        return chunk[:end]

    @staticmethod
    def _next_pack(pending: list[int], tails: list[list[int]], batch_size: int, max_tokens: int) -> list[int]:
        """The next candidates to score together: at most batch_size of them and max_tokens (at least one)."""
        tokens, end = len(tails[pending[0]]), 1
        while end < min(batch_size, len(pending)) and tokens + len(tails[pending[end]]) <= max_tokens:
            tokens += len(tails[pending[end]])
            end += 1
        return pending[:end]

    def _release_cached_memory(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()

    def close(self) -> None:
        self.constant_prefixes.clear()
        del self.model, self.head_rows
        self._release_cached_memory()
