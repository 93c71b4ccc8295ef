"""Text shaping for search: what goes into the keyword index and the embedder, and FTS5-safe keyword queries."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import Stemmer

__all__ = (
    "STOP_WORDS",
    "Term",
    "embedding_input",
    "fts_document",
    "keyword_terms",
    "match_expression",
)

# Scripts written without spaces between words. unicode61 would index a whole run as one token, so runs are
# indexed as overlapping character bigrams (the usual CJK n-gram approach); Hangul is spaced and left alone.
_CJK = "\u3005\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
# A word as unicode61 sees one: letters and digits; everything else (underscore, quotes, ':', '*') separates.
_WORD = re.compile(f"[{_CJK}]+|[^\\W_]+")

# English function words and question words: they carry no topic, and in chat they match most messages.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being below
    between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
    further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is
    isn it its itself just let ll me more most mustn my myself no nor not now of off on once only or other
    ought our ours ourselves out over own re same shan she should shouldn so some such than that the their
    theirs them themselves then there these they this those through to too under until up ve very was wasn we
    were weren what when where which while who whom why will with won would wouldn you your yours yourself
    yourselves also ever get got may might much must shall us whose yet
    """.split()
)

# Porter, like the FTS5 tokenizer, so two query words that index as one term count once.
_STEMMER = Stemmer.Stemmer("porter")
# The previous message is context, not the message: cap it so it cannot crowd the message out of the
# embedder's token window (MiniLM reads 256 word pieces).
_PREVIOUS_MAX_CHARS = 300


def _normalise(text: str) -> str:
    # NFKC folds full-width Latin and half-width kana into the forms people type in queries.
    return unicodedata.normalize("NFKC", text)


def _cjk_grams(run: str) -> list[str]:
    """Overlapping bigrams of a CJK run, plus its last character so a one-character query finds every use."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]]


def fts_document(content: str) -> str:
    """The text stored in ``messages_fts.body`` for a message: as written, with CJK runs made searchable."""
    text = _normalise(content)
    return _CJK_RUN.sub(lambda m: " " + " ".join(_cjk_grams(m.group())) + " ", text)


def embedding_input(author_name: str, content: str, previous: tuple[str, str] | None) -> str:
    """What the embedder reads for a message: the previous message in the channel (as context), then this one."""
    line = f"{author_name}: {content}"
    if previous is None:
        return line
    previous_author, previous_content = previous
    if len(previous_content) > _PREVIOUS_MAX_CHARS:
        previous_content = previous_content[:_PREVIOUS_MAX_CHARS] + "…"
    return f"{previous_author}: {previous_content}\n{line}"


def keyword_terms(query: str) -> list[str]:
    """The searchable words of free text: lower-cased, stop-words and stray letters dropped, one per stem.

    CJK runs become the same bigrams as in ``fts_document``; a single CJK character is kept as a prefix term.
    """
    terms: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(_normalise(query).lower()):
        if _CJK_RUN.fullmatch(word):
            grams = _cjk_grams(word)[:-1] if len(word) > 1 else [word]
            candidates = [(gram, gram) for gram in grams]
        elif word in STOP_WORDS or (len(word) == 1 and not word.isdigit()):
            continue
        else:
            candidates = [(word, _STEMMER.stemWord(word))]
        for term, key in candidates:
            if key not in seen:
                seen.add(key)
                terms.append(term)
    return terms


@dataclass(frozen=True, slots=True)
class Term:
    """One keyword-query term, optionally limited to one FTS5 column (``"body"`` or ``"author"``)."""

    text: str
    column: str | None = None


def _literal(term: Term) -> str:
    # Inside an FTS5 string nothing is syntax (AND, NEAR, '*', ':', '^'); a '"' is written twice.
    literal = '"' + term.text.replace('"', '""') + '"'
    # A lone CJK character is indexed inside bigrams, so it is matched as a prefix of them.
    if len(term.text) == 1 and _CJK_RUN.fullmatch(term.text):
        literal += "*"
    return f"{term.column} : {literal}" if term.column else literal


def match_expression(terms: list[Term] | list[str], ranking_only: list[Term] | list[str] = ()) -> str | None:
    """An FTS5 MATCH string that ORs the terms as literals, or None when there is nothing to search.

    ``ranking_only`` terms match nothing on their own: they are ANDed with the others, so bm25() counts them in
    the rows those match (FTS5 scores every phrase of the query) without adding rows to score.
    """
    if not terms:
        return None
    matching = " OR ".join(_literal(term if isinstance(term, Term) else Term(term)) for term in terms)
    if not ranking_only:
        return matching
    ranking = " OR ".join(_literal(term if isinstance(term, Term) else Term(term)) for term in ranking_only)
    return f"{matching} OR (({ranking}) AND ({matching}))"
