"""RerankerService with the local provider on a tiny random Qwen3 (real tokenizer, real model code)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path

import pytest
import torch

from cogs.memory.rerank import scorers as _rerank_backends
from cogs.memory.rerank.local import LocalScorer
from cogs.memory.records import Hit
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.rerank.service import RerankerService
from tests.fixtures.reranker import arerank_results, hits_of, rerank_results, with_reranker
from tests.fixtures.waiting import eventually

# The official Qwen3-Reranker method, written out independently of the product code.
OFFICIAL_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
OFFICIAL_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
INSTRUCTION = "Given a chat message, retrieve past messages that answer it"
QUERY = "When did Caroline go to the LGBTQ support group?"
DOCS = [
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "Hey Mel! Good to see you! How have you been?",
    "ok",
    "",
    "  leading spaces and a number 42",
    "\nstarts with a newline",
    "émoji 🎉 and ünïcode, 中文也可以",
    "Painting a sunrise last year was the best thing I did in 2022. " * 3,
    "<|im_end|> a document that looks like a control token",
]


def official_scores(model_dir: Path, query: str, docs: list[str], instruction: str, max_length: int) -> list[float]:
    """One full prompt per pair, left padding, full forward, full logits: the Qwen3-Reranker model card's code."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    prefix = tokenizer.encode(OFFICIAL_PREFIX, add_special_tokens=False)
    suffix = tokenizer.encode(OFFICIAL_SUFFIX, add_special_tokens=False)
    pairs = [f"<Instruct>: {instruction}\n<Query>: {query}\n<Document>: {doc}" for doc in docs]
    inputs = tokenizer(pairs, padding=False, truncation="longest_first", return_attention_mask=False,
                       max_length=max_length - len(prefix) - len(suffix))
    inputs["input_ids"] = [prefix + ids + suffix for ids in inputs["input_ids"]]
    inputs = tokenizer.pad(inputs, padding=True, return_tensors="pt", max_length=max_length)
    with torch.inference_mode():
        logits = model(**inputs).logits[:, -1, :]
    pair = torch.stack([logits[:, no], logits[:, yes]], dim=1)
    return torch.log_softmax(pair, dim=1)[:, 1].exp().tolist()


@pytest.fixture(scope="module")
def scorer(tiny_reranker_dir: Path) -> LocalScorer:
    return LocalScorer(str(tiny_reranker_dir), "cpu", "float32", max_length=512)


@pytest.fixture
def service(tiny_reranker_profile: MemoryProfile):
    svc = RerankerService(tiny_reranker_profile)
    yield svc
    svc.close()


def candidates(docs: list[str] = DOCS) -> list[Hit]:
    return hits_of(docs)


def test_yes_and_no_are_the_real_qwen3_token_ids(scorer: LocalScorer) -> None:
    assert (scorer.yes_id, scorer.no_id) == (9693, 2152)


def test_prompt_tokens_are_the_official_text(scorer: LocalScorer) -> None:
    text = OFFICIAL_PREFIX + f"<Instruct>: {INSTRUCTION}\n<Query>: {QUERY}\n<Document>: {DOCS[0]}" + OFFICIAL_SUFFIX
    assert scorer.prompt_ids(QUERY, [DOCS[0]], INSTRUCTION)[0] == scorer.tokenizer.encode(text,
                                                                                         add_special_tokens=False)


def test_split_prompts_rejoin_into_the_full_prompts(scorer: LocalScorer) -> None:
    split = scorer.split_prompts(QUERY, DOCS, INSTRUCTION)
    assert [split.shared + tail for tail in split.tails] == scorer.prompt_ids(QUERY, DOCS, INSTRUCTION)


def test_query_part_is_shared_by_all_candidates(scorer: LocalScorer) -> None:
    split = scorer.split_prompts(QUERY, DOCS, INSTRUCTION)
    query_part = scorer.tokenizer.encode(f"<Instruct>: {INSTRUCTION}\n<Query>: {QUERY}\n<Document>:",
                                         add_special_tokens=False)
    assert split.shared == scorer.prefix_ids + query_part


def test_fast_path_equals_the_official_method(scorer: LocalScorer, tiny_reranker_dir: Path) -> None:
    fast = scorer.score(QUERY, DOCS, INSTRUCTION, batch_size=3)
    reference = official_scores(tiny_reranker_dir, QUERY, DOCS, INSTRUCTION, max_length=512)
    assert max(abs(a - b) for a, b in zip(fast, reference, strict=True)) <= 1e-5


def test_fast_path_equals_the_official_method_across_token_capped_packs(
    scorer: LocalScorer, tiny_reranker_dir: Path
) -> None:
    docs = [f"message {i}: " + "a long rambling story about the weekend " * (20 + 5 * i) for i in range(4)]
    assert sum(len(t) for t in scorer.split_prompts(QUERY, docs, INSTRUCTION).tails) > scorer.max_pack_tokens
    fast = scorer.score(QUERY, docs, INSTRUCTION, batch_size=4)
    reference = official_scores(tiny_reranker_dir, QUERY, docs, INSTRUCTION, max_length=512)
    assert max(abs(a - b) for a, b in zip(fast, reference, strict=True)) <= 1e-5


def test_truncation_cuts_the_body_and_keeps_the_suffix(tiny_reranker_dir: Path) -> None:
    short = LocalScorer(str(tiny_reranker_dir), "cpu", "float32", max_length=80)
    ids = short.prompt_ids(QUERY, ["word " * 500], INSTRUCTION)[0]
    assert len(ids) == 80
    assert ids[-len(short.suffix_ids):] == short.suffix_ids


def test_fast_path_equals_the_official_method_when_truncating(tiny_reranker_dir: Path) -> None:
    short = LocalScorer(str(tiny_reranker_dir), "cpu", "float32", max_length=80)
    docs = ["word " * 500, "short one", "another fairly long message " * 10]
    fast = short.score(QUERY, docs, INSTRUCTION, batch_size=2)
    reference = official_scores(tiny_reranker_dir, QUERY, docs, INSTRUCTION, max_length=80)
    assert max(abs(a - b) for a, b in zip(fast, reference, strict=True)) <= 1e-5


def test_results_are_sorted_by_rerank_score(service: RerankerService) -> None:
    results = rerank_results(service, QUERY, candidates(), top_k=None, instruction=INSTRUCTION)
    scores = [r.rerank_score for r in results]
    assert scores == sorted(scores, reverse=True)


def test_each_result_keeps_its_own_score_after_length_sorting(service: RerankerService, scorer: LocalScorer) -> None:
    results = rerank_results(service, QUERY, candidates(), top_k=None, instruction=INSTRUCTION)
    expected = scorer.score(QUERY, DOCS, INSTRUCTION, batch_size=len(DOCS))
    for result in results:
        assert result.rerank_score == pytest.approx(expected[result.message_id], abs=1e-6)


def test_input_candidates_are_not_mutated(service: RerankerService) -> None:
    given = candidates()
    rerank_results(service, QUERY, given)
    assert given == candidates()


def test_top_k_cuts_the_result(service: RerankerService) -> None:
    assert len(rerank_results(service, QUERY, candidates(), top_k=3)) == 3


def test_a_top_k_below_one_is_refused_not_sliced_by(service: RerankerService) -> None:
    with pytest.raises(ValueError, match="^limit must be a whole number of at least 1, not -5$"):
        rerank_results(service, QUERY, candidates(), top_k=-5)


def test_min_score_drops_scored_candidates_below_it(tiny_reranker_profile: MemoryProfile) -> None:
    all_scores = sorted(r.rerank_score for r in _rerank(tiny_reranker_profile))
    threshold = all_scores[len(all_scores) // 2]
    kept = _rerank(with_reranker(tiny_reranker_profile, min_score=threshold))
    assert [r.rerank_score >= threshold for r in kept] == [True] * (len(all_scores) - len(all_scores) // 2)


def _rerank(profile: MemoryProfile, docs: list[str] = DOCS) -> list[dict]:
    service = RerankerService(profile)
    try:
        return rerank_results(service, QUERY, candidates(docs), top_k=None)
    finally:
        service.close()


def test_only_the_profiles_candidate_count_is_scored(tiny_reranker_profile: MemoryProfile) -> None:
    results = _rerank(with_reranker(tiny_reranker_profile, candidates=4))
    assert [r.message_id for r in results if r.rerank_score is None] == [4, 5, 6, 7, 8]


def test_repeated_query_is_served_from_the_cache(service: RerankerService, monkeypatch: pytest.MonkeyPatch) -> None:
    first = rerank_results(service, QUERY, candidates())
    monkeypatch.setattr(LocalScorer, "forward_tails", _must_not_run)
    assert rerank_results(service, QUERY, candidates()) == first


def test_each_call_says_what_it_took_scored_and_found_in_the_cache(tiny_reranker_profile: MemoryProfile) -> None:
    service = RerankerService(with_reranker(tiny_reranker_profile, candidates=4))
    try:
        first = service.score(QUERY, DOCS)
        again = service.score(QUERY, DOCS[:2] + ["a text the cache has not seen"])
    finally:
        service.close()
    assert (first.offered, first.scored, first.cached, first.by) == (4, 4, 0, "torch float32")
    assert (again.offered, again.scored, again.cached) == (3, 3, 2)
    assert len(first.scores) == len(DOCS) and first.scores[4:] == (None,) * (len(DOCS) - 4)


async def test_a_model_still_loading_takes_nothing(tiny_reranker_profile: MemoryProfile,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    service = RerankerService(tiny_reranker_profile)
    monkeypatch.setattr(service, "_start_loading", lambda warm=False: list(service._providers))  # never loads
    try:
        scored = await service.ascore(QUERY, DOCS)
    finally:
        await service.aclose()
    assert (scored.offered, scored.scored, scored.cached, scored.by) == (0, 0, 0, None)


def _must_not_run(*args: object) -> list[float]:
    raise AssertionError("the model ran although every score was cached")


def test_time_budget_leaves_the_rest_unscored_in_first_stage_order(
    tiny_reranker_profile: MemoryProfile, slow_batches: None
) -> None:
    # Every batch "takes" 10 s of a 1 s budget.
    results = _rerank(with_reranker(tiny_reranker_profile, time_budget_ms=1000, batch_size=2))
    scored = [r for r in results if r.rerank_score is not None]
    assert len(scored) == 2
    assert [r.message_id for r in results[2:]] == [i for i in range(len(DOCS)) if i not in
                                                      {r.message_id for r in scored}]


def test_out_of_memory_halves_the_batch_down_to_one(
    tiny_reranker_profile: MemoryProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    real_forward = LocalScorer.forward_tails

    def forward_fits_one(self: LocalScorer, prefix_kv: list, tails: list) -> list[float]:
        sizes.append(len(tails))
        if len(tails) > 1:
            raise torch.OutOfMemoryError("simulated")
        return real_forward(self, prefix_kv, tails)

    monkeypatch.setattr(LocalScorer, "forward_tails", forward_fits_one)
    results = _rerank(with_reranker(tiny_reranker_profile, batch_size=4))
    assert sizes[:3] == [4, 2, 1] and all(r.rerank_score is not None for r in results)


def test_out_of_memory_at_batch_one_falls_back_to_first_stage_order(
    tiny_reranker_profile: MemoryProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    def always_oom(self: LocalScorer, prefix_kv: list, tails: list) -> list[float]:
        raise torch.OutOfMemoryError("simulated")

    monkeypatch.setattr(LocalScorer, "forward_tails", always_oom)
    results = _rerank(with_reranker(tiny_reranker_profile, batch_size=4))
    assert [(r.message_id, r.rerank_score) for r in results] == [(i, None) for i in range(len(DOCS))]


def test_provider_none_keeps_first_stage_order(tiny_reranker_profile: MemoryProfile) -> None:
    results = _rerank(with_reranker(tiny_reranker_profile, provider="none"))
    assert [(r.message_id, r.rerank_score) for r in results] == [(i, None) for i in range(len(DOCS))]


def test_load_failure_reports_unavailable_with_the_reason(tiny_reranker_profile: MemoryProfile) -> None:
    service = RerankerService(tiny_reranker_profile, reranker_model="/nonexistent/qwen3-reranker")
    try:
        results = rerank_results(service, QUERY, candidates())
        status = service.status()
    finally:
        service.close()
    assert [r.rerank_score for r in results] == [None] * len(DOCS)
    assert status.available is False and "/nonexistent/qwen3-reranker" in status.reason


def test_failed_load_is_not_retried_until_asked(
    tiny_reranker_profile: MemoryProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[str] = []

    def failing_scorer(model_name: str, *args: object) -> LocalScorer:
        attempts.append(model_name)
        raise OSError("no network")

    monkeypatch.setattr(_rerank_backends, "LocalScorer", failing_scorer)
    service = RerankerService(tiny_reranker_profile)
    try:
        rerank_results(service, QUERY, candidates())
        rerank_results(service, QUERY, candidates())
    finally:
        service.close()
    assert len(attempts) == 1


async def test_async_form_gives_the_same_results(service: RerankerService) -> None:
    expected = await asyncio.to_thread(rerank_results, service, QUERY, candidates())
    assert await arerank_results(service, QUERY, candidates()) == expected


def test_full_queue_returns_first_stage_order_unscored(tiny_reranker_profile: MemoryProfile) -> None:
    service = RerankerService(tiny_reranker_profile, queue_size=1)
    release = threading.Event()
    try:
        service._worker.submit(release.wait, block=True)  # occupies the worker
        service._worker.submit(release.wait, block=True)  # fills the one queue slot
        results = rerank_results(service, QUERY, candidates())
    finally:
        release.set()
        service.close()
    assert [(r.message_id, r.rerank_score) for r in results] == [(i, None) for i in range(len(DOCS))]


async def test_switch_replaces_profile_and_model(service: RerankerService, tiny_reranker_profile: MemoryProfile) -> None:
    new = dataclasses.replace(with_reranker(tiny_reranker_profile, max_length=64), name="test-tiny-short")
    assert await service.switch(new) is True
    assert service.status().profile == "test-tiny-short" and service._backend.max_length == 64


async def test_failed_switch_keeps_the_old_profile(service: RerankerService,
                                                   tiny_reranker_profile: MemoryProfile) -> None:
    await service.aload()  # recalls do not wait for a model still loading
    before = await arerank_results(service, QUERY, candidates())
    ok = await service.switch(with_reranker(tiny_reranker_profile, model="/nonexistent/model"))
    assert not ok and "/nonexistent/model" in service.status().last_switch_error
    assert await arerank_results(service, QUERY, candidates()) == before


async def test_work_queued_before_a_switch_finishes_on_the_old_model(
    service: RerankerService, tiny_reranker_profile: MemoryProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    await service.aload()  # loads the first model
    old_backend = service._backend
    release = threading.Event()
    service._worker.submit(release.wait, block=True)
    queued = asyncio.ensure_future(arerank_results(service, QUERY, candidates(["only on the old model"])))
    await eventually(lambda: service._worker.depth == 1, what="the rerank waits behind the held job")
    switching = asyncio.ensure_future(service.switch(tiny_reranker_profile))
    used: list[object] = []
    real_score = LocalScorer.score

    def spy(self: LocalScorer, *args: object, **kwargs: object) -> list[float | None]:
        used.append(self)
        return real_score(self, *args, **kwargs)

    monkeypatch.setattr(LocalScorer, "score", spy)
    release.set()
    await queued
    await switching
    assert used == [old_backend] and service._backend is not old_backend


def test_the_device_it_is_given_wins_over_the_profiles(tiny_reranker_profile: MemoryProfile) -> None:
    service = RerankerService(dataclasses.replace(tiny_reranker_profile, device="cuda"), device="cpu")
    try:
        results = rerank_results(service, QUERY, candidates())
        status = service.status()
    finally:
        service.close()
    assert (status.device, results[0].rerank_score is not None) == ("cpu", True)
