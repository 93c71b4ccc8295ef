"""What an embedding model can read: its declared script coverage, and the share of a query written in it.

Hybrid search weighs the vector side by that share (search.fuse_sides): an English-only model such as
all-MiniLM-L6-v2 reads Latin word pieces; Chinese, Japanese, Korean or Thai text it sees as unknown or untrained
pieces, so its nearest messages to a Chinese question are noise, and the keyword side alone should decide. A
multilingual model reads every script, and the vector side keeps its full weight.
"""

from __future__ import annotations

import re
import unicodedata

from .scripts import HAN, KANA, LATIN, SOUTHEAST_ASIAN, ranges

__all__ = ("SCRIPTS", "covered_share", "model_scripts")

# What a model reads: "latin" (Latin-script languages only) or "all".
SCRIPTS = ("latin", "all")
# English-only sentence-transformers models, matched on the last part of the name (a hub id or a local directory):
# the all-*, multi-qa-*, msmarco-* and English paraphrase-* families, English BGE, E5 and GTE. Any other model is
# taken to read every script; a profile's embedding_scripts says otherwise.
LATIN_ONLY = re.compile(
    r"(all|multi-qa|msmarco|paraphrase)-(?!multilingual).*|bge-(small|base|large)-en(-v1\.5)?"
    r"|e5-(small|base|large)(-v2)?|gte-(small|base|large)",
    re.IGNORECASE,
)


def model_scripts(model: str, declared: str | None = None) -> str:
    """The scripts ``model`` reads: ``declared`` (a profile's embedding_scripts) when given, else from its name."""
    if declared is not None:
        return declared
    name = model.replace("\\", "/").rstrip("/").rpartition("/")[2]
    return "latin" if LATIN_ONLY.fullmatch(name) else "all"


# Letters of scripts written without spaces (Han, kana, Thai, Lao, Myanmar, Khmer): each counts as a word, as a
# Chinese character carries about what a word does. A run of Latin letters is a word, and so is a run of any other
# script's letters (Cyrillic, Hangul...): "Kenji는" is a Latin word and a Korean one.
_UNSPACED = ranges(KANA, HAN, SOUTHEAST_ASIAN)
_LATIN = ranges(LATIN)
_WORD = re.compile(f"(?P<latin>[{_LATIN}]+)|[{_UNSPACED}]|[^\\W\\d_{_UNSPACED}{_LATIN}]+")


def covered_share(query: str, scripts: str) -> float:
    """The share of ``query``'s words written in ``scripts``; 1.0 for a model of every script or a query of no words.

    A letter of an unspaced script counts as one word: "Daniel在哪里上班？" is one Latin word in six, and an English
    model reads the name but not what is asked about him. Full-width Latin counts as Latin (NFKC), as the embedder
    reads it; marks and digits are no words.
    """
    if scripts == "all" or query.isascii():
        return 1.0
    words = [match for match in _WORD.finditer(unicodedata.normalize("NFKC", query))
             if unicodedata.category(match.group()[0]).startswith("L")]
    if not words:
        return 1.0
    return sum(match.lastgroup == "latin" for match in words) / len(words)
