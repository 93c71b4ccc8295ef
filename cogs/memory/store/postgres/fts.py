"""PostgreSQL full-text search that tokenises like the SQLite side: FTS5's porter+unicode61 words, CJK bigrams.

PostgreSQL's 'simple' configuration only lower-cases, so the stemming and diacritic folding that FTS5's tokenizer
does are done here, on the same ``text.fts_document`` text, and the stems go into the tsvector as words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection
from typing import cast

import Stemmer

from ...language import keywords as text

__all__ = ("document_words", "is_prefix", "query_words", "tsquery", "words")

# Letters and digits, as FTS5's unicode61 splits them; CJK bigrams from fts_document are runs of letters too.
_TOKEN = re.compile(r"[^\W_]+")
_CJK = re.compile("[\u3005\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_STEMMER = Stemmer.Stemmer("porter")
# FTS5's porter tokenizer passes a token shorter than 3 bytes or longer than 64 through unstemmed ("s", "us").
PORTER_MIN_BYTES, PORTER_MAX_BYTES = 3, 64


def _fold(word: str) -> str:
    """Lower case without diacritics (unicode61 remove_diacritics 2)."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def _stem(word: str) -> str:
    if _CJK.search(word) or not PORTER_MIN_BYTES <= len(word.encode()) <= PORTER_MAX_BYTES:
        return word
    return cast(str, _STEMMER.stemWord(word))


def words(indexed_text: str) -> str:
    """The words ``to_tsvector('simple', ...)`` indexes for text as FTS5 gets it: folded and stemmed.

    A body is passed as ``text.fts_document`` made it (CJK runs already bigrams), an author name as it is.
    """
    return " ".join(_stem(_fold(token)) for token in _TOKEN.findall(indexed_text))


def document_words(content: str) -> str:
    """The indexed words of a message body."""
    return words(text.fts_document(content))


def query_words(query: str) -> list[str]:
    """The stems of ``text.keyword_terms``: the words a query looks up, as the tsvector holds them."""
    words: list[str] = []
    for term in text.keyword_terms(query):
        for token in _TOKEN.findall(term):
            word = _stem(_fold(token))
            if word not in words:
                words.append(word)
    return words


def tsquery(words: list[str], authors: Collection[str] = ()) -> str | None:
    """A ``to_tsquery('simple', ...)`` string ORing ``words`` as quoted lexemes; a lone CJK character is a prefix.

    A word in ``authors`` matches only where the author's name holds it (the document's B words, store.py).
    """
    if not words:
        return None
    parts = []
    for word in words:
        lexeme = "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
        label = ("*" if is_prefix(word) else "") + ("B" if word in authors else "")
        parts.append(lexeme + (":" + label if label else ""))
    return " | ".join(parts)


def is_prefix(word: str) -> bool:
    """Whether ``word`` is looked up as a prefix: a lone CJK character, which the documents hold inside bigrams."""
    return len(word) == 1 and _CJK.match(word) is not None
