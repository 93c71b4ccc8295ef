"""bench.fidelity's trim measurement on the tiny random Qwen3: a cut no candidate reaches changes nothing and is not
scored, a cut that bites moves the scores, and packed candidates are fed without padding."""

from __future__ import annotations

from pathlib import Path

from bench.fidelity import trim_effect
from bench.rerank import Case

DOCS = ["the backup job failed again last night because the disk was full of old snapshots",
        "ok", "pihole keeps dropping dns for the tv", "lunch?"]


def test_trim_effect_counts_the_candidates_a_cut_reaches_and_the_padding(tiny_reranker_dir: Path,
                                                                         onnx_export_root: Path) -> None:
    sets = {"chat": [Case("why did the backup fail?", DOCS), Case("what is wrong with the dns?", DOCS[1:])]}
    result = trim_effect(tiny_reranker_dir, onnx_export_root, sets, [1000, 3])
    chat = result["chat"]
    assert chat["candidates"] == 7 and 3 < chat["max_tokens"] < 1000
    assert chat["cut_1000"] == {"longer": 0, "queries_affected": 0}
    assert chat["cut_3"]["longer"] == 3 and chat["cut_3"]["queries_affected"] == 2
    assert chat["cut_3"]["fidelity_vs_uncut"]["max_abs_diff"] > 0
    assert result["padding_share"] == 0 and result["tokens_fed"] > 0
