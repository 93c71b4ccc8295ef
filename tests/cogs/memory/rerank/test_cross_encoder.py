"""Classic cross-encoders (sequence classifiers) through the same RerankerService: the family is read from the
model's config, scores are in [0, 1]. Tiny random BERT classifiers with the real MiniLM tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

from cogs.memory.rerank.scorers import CROSS_ENCODER, YES_NO_LM, model_family
from cogs.memory.rerank.cross_encoder import CrossEncoderScorer
from cogs.memory.runtime.profile import MemoryProfile
from cogs.memory.rerank.service import RerankerService
from tests.cogs.memory.rerank.test_service import DOCS, QUERY, candidates
from tests.fixtures.reranker import build_tiny_cross_encoder, rerank_results, with_reranker


def direct_logits(model_dir: Path, query: str, docs: list[str]) -> torch.Tensor:
    """The logits for each (query, doc) pair, one pair at a time (as a batch of one, so an empty document is still
    a pair, as in a batch), written independently of the product."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    with torch.inference_mode():
        return torch.cat([model(**tokenizer([query], [doc], truncation=True, max_length=128,
                                            return_tensors="pt")).logits for doc in docs])


@pytest.fixture
def cross_encoder_profile(tiny_reranker_profile: MemoryProfile, tiny_cross_encoder_dir: Path) -> MemoryProfile:
    return with_reranker(tiny_reranker_profile, model=str(tiny_cross_encoder_dir), backend="auto")


def _rerank(profile: MemoryProfile, export_dir: Path) -> tuple[list[dict], dict]:
    service = RerankerService(profile, export_dir=export_dir)
    try:
        return rerank_results(service, QUERY, candidates(), top_k=None), service.status()
    finally:
        service.close()


def test_sequence_classifier_is_a_cross_encoder(tiny_cross_encoder_dir: Path) -> None:
    assert model_family(AutoConfig.from_pretrained(tiny_cross_encoder_dir)) == CROSS_ENCODER


def test_causal_lm_is_a_yes_no_reranker(tiny_reranker_dir: Path) -> None:
    assert model_family(AutoConfig.from_pretrained(tiny_reranker_dir)) == YES_NO_LM


def test_other_architectures_are_refused_with_what_is_supported(tiny_cross_encoder_dir: Path) -> None:
    config = AutoConfig.from_pretrained(tiny_cross_encoder_dir)
    config.architectures = ["BertModel"]
    with pytest.raises(ValueError, match=r"neither a causal LM .* nor a sequence classifier"):
        model_family(config)


def test_service_scores_a_cross_encoder_with_the_sigmoid_of_its_logit(
    cross_encoder_profile: MemoryProfile, tiny_cross_encoder_dir: Path, tmp_path: Path
) -> None:
    results, status = _rerank(cross_encoder_profile, tmp_path)
    expected = torch.sigmoid(direct_logits(tiny_cross_encoder_dir, QUERY, DOCS)[:, 0]).tolist()
    assert status.backend == "torch" and status.available is True
    for result in results:
        assert result.rerank_score == pytest.approx(expected[result.message_id], abs=1e-5)


def test_cross_encoder_scores_are_probabilities(cross_encoder_profile: MemoryProfile, tmp_path: Path) -> None:
    results, _ = _rerank(cross_encoder_profile, tmp_path)
    scores = [r.rerank_score for r in results]
    assert all(0.0 <= s <= 1.0 for s in scores) and scores == sorted(scores, reverse=True)


def test_two_label_cross_encoder_scores_the_softmax_of_label_one(
    tiny_reranker_profile: MemoryProfile, tmp_path: Path
) -> None:
    model_dir = build_tiny_cross_encoder(tmp_path / "two-labels", num_labels=2)
    results, _ = _rerank(with_reranker(tiny_reranker_profile, model=str(model_dir)), tmp_path / "onnx")
    expected = torch.softmax(direct_logits(model_dir, QUERY, DOCS), dim=-1)[:, 1].tolist()
    for result in results:
        assert result.rerank_score == pytest.approx(expected[result.message_id], abs=1e-5)


def test_long_pairs_are_truncated_to_the_models_positions(tiny_cross_encoder_dir: Path) -> None:
    scorer = CrossEncoderScorer(str(tiny_cross_encoder_dir), "cpu", "float32", max_length=512)
    scores = scorer.score(QUERY, ["word " * 2000, "short"], None, batch_size=2)
    assert scorer.max_length == 128 and all(s is not None for s in scores)
