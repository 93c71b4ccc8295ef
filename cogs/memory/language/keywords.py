"""Text shaping for search: what goes into the keyword index and the embedder, and FTS5-safe keyword queries."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from re import Match

import Stemmer

from .questions import QUERY_CUT_WORDS
from .scripts import HAN, HAN_MARKS, HANGUL, KANA, SOUTHEAST_ASIAN, ranges

__all__ = (
    "STOP_WORDS",
    "Term",
    "characters",
    "embedding_input",
    "embedding_query",
    "fts_document",
    "keyword_terms",
    "match_expression",
    "match_term",
)


def _char_class(*blocks: tuple[int, int], categories: str = "LNM") -> str:
    """A regex character class body: the code points of ``blocks`` whose category starts with one of ``categories``.

    Punctuation inside a script's block is left out, so it separates there as it does for unicode61.
    """
    chars = [chr(c) for first, last in blocks for c in range(first, last + 1)
             if unicodedata.category(chr(c))[0] in categories]
    ranges: list[str] = []
    start = previous = None
    for char in chars + [None]:
        if char is not None and previous is not None and ord(char) == ord(previous) + 1:
            previous = char
            continue
        if start is not None and previous is not None:
            ranges.append(re.escape(start) if start == previous else f"{re.escape(start)}-{re.escape(previous)}")
        start = previous = char
    return "".join(ranges)


# Han and kana are written without spaces between words, so unicode61 would index a whole run as one token: runs
# are indexed as overlapping character bigrams (the usual CJK n-gram approach, as Lucene's CJK analyzer does).
# Hangul is spaced, but particles and endings are glued to each word (서울에서 = 서울 + 에서), so it is cut the
# same way and "서울" finds "서울에서". The Han blocks are all letters and are written out as ranges.
_HAN = ranges(HAN_MARKS, HAN)
_KANA_HANGUL = _char_class(*KANA, *HANGUL)
_CJK = _HAN + _KANA_HANGUL
_KANA_HANGUL_CHAR = re.compile(f"[{_KANA_HANGUL}]")
_HAN_BIGRAM = re.compile(f"[{_HAN}]{{2}}")
# Chinese function characters (particles, pronouns, the commonest verbs): alone they match most messages.
_FUNCTION_HAN = frozenset("的了是在我你他她它们这那有不也就都和吧啊呀吗呢么个一上下到说要会能很还")
# Thai, Lao, Myanmar and Khmer are written without spaces too, and a letter carries its vowel and tone marks: a
# run is cut into such clusters, and bigrams are made of clusters, never of a mark alone.
_SOUTHEAST_ASIAN = _char_class(*SOUTHEAST_ASIAN)
_SOUTHEAST_ASIAN_MARKS = _char_class(*SOUTHEAST_ASIAN, categories="M")
_CLUSTER = re.compile(f"[^{_SOUTHEAST_ASIAN_MARKS}][{_SOUTHEAST_ASIAN_MARKS}]*|[{_SOUTHEAST_ASIAN_MARKS}]+")
# Combining marks of other scripts (Devanagari vowel signs, Arabic harakat...) belong to their word: the FTS
# table's tokenizer counts them as token characters (categories L* N* Co M*), and so does a query's word here.
_MARKS = _char_class((0x0300, 0x1FFF), (0x20D0, 0x20FF), (0x2CEF, 0x2CF1), (0x2DE0, 0x2DFF), (0x302A, 0x302F),
                     (0x3099, 0x309A), (0xA640, 0xABFF), (0xFB1E, 0xFB1E), (0xFE00, 0xFE2F), categories="M")
_BIGRAM_RUN = re.compile(f"(?P<cjk>[{_CJK}]+)|(?P<clusters>[{_SOUTHEAST_ASIAN}]+)")
# A query word: a bigram-script run, or letters, digits and marks as unicode61 sees a token; everything else
# (underscore, quotes, ':', '*') separates. Latin letters and digits never join a CJK run: "Caroline什么" is two.
_WORD = re.compile(f"{_BIGRAM_RUN.pattern}"
                   f"|[^\\W_{_CJK}{_SOUTHEAST_ASIAN}]+(?:[{_MARKS}]+[^\\W_{_CJK}{_SOUTHEAST_ASIAN}]*)*")
_ASCII_WORD = re.compile("[^\\W_]+", re.ASCII)

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
    # NFKC folds full-width Latin and digits and half-width kana into the forms people type in queries.
    return unicodedata.normalize("NFKC", text)


def _units(run: Match[str]) -> list[str] | str:
    """The characters a bigram-script run is cut into: code points, or letter-and-marks clusters."""
    return run.group() if run.lastgroup == "cjk" else _CLUSTER.findall(run.group())


def _grams(units: list[str] | str) -> list[str]:
    """Overlapping bigrams of a run's units, plus its last unit so a one-character query finds every use."""
    if len(units) == 1:
        return [units[0]]
    if isinstance(units, str):  # code points: slicing is the fast path
        return [units[i : i + 2] for i in range(len(units) - 1)] + [units[-1]]
    return [units[i] + units[i + 1] for i in range(len(units) - 1)] + [units[-1]]


def fts_document(content: str) -> str:
    """The text stored in ``messages_fts.body`` for a message: as written, with bigram-script runs cut up.

    Latin, Cyrillic, Devanagari... words are left to the table's tokenizer; Han, kana, Hangul and Thai runs become
    space-separated bigrams, which also splits them from Latin names and numbers written against them.
    """
    if content.isascii():  # most chat: nothing to fold and no run to cut
        return content
    return _BIGRAM_RUN.sub(_cut_run, _normalise(content))


def _cut_run(run: Match[str]) -> str:
    """A bigram-script run as ``fts_document`` stores it: its bigrams and last unit, spaced from its neighbours."""
    text = run.group()
    if run.lastgroup == "cjk":
        if len(text) == 1:
            return f" {text} "
        # "a b c d" -> " ab bc cd d ": the same as _grams(), in one join
        return " " + " ".join([text[i : i + 2] for i in range(len(text) - 1)]) + f" {text[-1]} "
    return " " + " ".join(_grams(_CLUSTER.findall(text))) + " "


def embedding_input(author_name: str, content: str, previous: tuple[str, str] | None) -> str:
    """What the embedder reads for a message: the previous message in the channel (as context), then this one.

    Full-width forms are folded as for the keyword index: an English-only vocabulary reads "Ｐｉｚｚａ" as unknown.
    """
    line = f"{author_name}: {_normalise(content)}"
    if previous is None:
        return line
    previous_author, previous_content = previous
    previous_content = _normalise(previous_content)
    if len(previous_content) > _PREVIOUS_MAX_CHARS:
        previous_content = previous_content[:_PREVIOUS_MAX_CHARS] + "…"
    return f"{previous_author}: {previous_content}\n{line}"


def embedding_query(query: str) -> str:
    """What the embedder reads for a search query: the query, its full-width forms folded as in messages."""
    return _normalise(query)


def keyword_terms(query: str) -> list[str]:
    """The searchable words of free text: lower-cased, stop-words and stray letters dropped, one per stem.

    Bigram-script runs become the same bigrams as in ``fts_document``, cut at Chinese question words; a run of one
    character (or cluster) is kept as a prefix term.
    """
    terms: list[str] = []
    seen: set[str] = set()
    words = _ASCII_WORD if query.isascii() else _WORD  # most queries: no run to find, a simpler pattern
    for match in words.finditer(_normalise(query).lower()):
        word = match.group()
        if match.lastgroup is not None:  # a bigram-script run
            candidates = [(gram, gram) for gram in _query_grams(match)]
        elif word in STOP_WORDS or (len(word) == 1 and not word.isdigit()):
            continue
        else:
            candidates = [(word, _STEMMER.stemWord(word))]
        for term, key in candidates:
            if key not in seen:
                seen.add(key)
                terms.append(term)
    return terms


def _query_grams(run: Match[str]) -> list[str]:
    """A query run's bigrams, with no bigram across a question word.

    A lone character is kept as a prefix term, unless it is kana or Hangul: written against a name ("Kenjiは",
    "Sara의") that is a particle, which would match most messages, as a stray Latin letter would.
    """
    pieces = QUERY_CUT_WORDS.split(run.group()) if run.lastgroup == "cjk" else [run.group()]
    grams: list[str] = []
    for piece in pieces:
        units = piece if run.lastgroup == "cjk" else _CLUSTER.findall(piece)
        if len(units) == 1 and not _KANA_HANGUL_CHAR.fullmatch(units[0]):
            grams.append(units[0])
        elif len(units) > 1:
            grams.extend(_grams(units)[:-1])
    return grams


def characters(bigram: str) -> list[str]:
    """The characters of a Han query bigram that are searched alone when no message holds the bigram whole.

    Chinese has no spaces, so a query's bigrams include ones that straddle two words ("艺课" in 陶艺课) or a
    word said differently in the messages (报名 "sign up" against 报了 "signed up"); such a bigram matches nothing,
    while each of its characters still names the topic. Function characters are left out.
    """
    if not _HAN_BIGRAM.fullmatch(bigram):
        return []
    return [character for character in bigram if character not in _FUNCTION_HAN]


def _is_one_unit(term: str) -> bool:
    """Whether ``term`` is a single character (or cluster) of a bigram script, stored only inside bigrams."""
    run = _BIGRAM_RUN.fullmatch(term)
    return run is not None and len(_units(run)) == 1


@dataclass(frozen=True, slots=True)
class Term:
    """One keyword-query term, optionally limited to one FTS5 column (``"body"`` or ``"author"``)."""

    text: str
    column: str | None = None


def _literal(term: Term) -> str:
    # Inside an FTS5 string nothing is syntax (AND, NEAR, '*', ':', '^'); a '"' is written twice.
    literal = '"' + term.text.replace('"', '""') + '"'
    # A lone CJK (or Thai...) character is indexed inside bigrams, so it is matched as a prefix of them.
    if _is_one_unit(term.text):
        literal += "*"
    return f"{term.column} : {literal}" if term.column else literal


def match_term(term: Term | str) -> str:
    """The FTS5 MATCH string of one term, as a literal."""
    return _literal(term if isinstance(term, Term) else Term(term))


def match_expression(terms: Sequence[Term | str], ranking_only: Sequence[Term | str] = ()) -> str | None:
    """An FTS5 MATCH string that ORs the terms as literals, or None when there is nothing to search.

    ``ranking_only`` terms match nothing on their own: they are ANDed with the others, so bm25() counts them in
    the rows those match (FTS5 scores every phrase of the query) without adding rows to score.
    """
    if not terms:
        return None
    matching = " OR ".join(map(match_term, terms))
    if not ranking_only:
        return matching
    ranking = " OR ".join(map(match_term, ranking_only))
    return f"{matching} OR (({ranking}) AND ({matching}))"
