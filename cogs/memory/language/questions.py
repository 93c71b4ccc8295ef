"""Whether a chat message asks something, and which of the messages after it in the channel may answer it; and the
Chinese question words a keyword query is cut at. Both lists of question words live here, each for its job."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from functools import lru_cache

__all__ = ("QUERY_CUT_WORDS", "answers", "asks", "to_everyone")

# Question marks of the scripts that have their own: Latin and full-width (CJK), Arabic, Greek, Armenian,
# Ethiopic, small forms.
_QUESTION_MARK = re.compile("[?\uff1f\u061f\u037e\u055e\u1367\ufe56\u2e2e]")
# Chat often drops the mark. An English message that opens with a question word, an auxiliary or "anyone" asks.
_ENGLISH_OPENERS = frozenset(
    """
    who what when where why which how whose whom is are am was were do does did can could will would should shall
    have has had may might any anyone anybody
    """.split()
)
_FIRST_WORD = re.compile(r"[^\W_][\w']*")
# A chat message often says something, then asks ("poor guy. how much was the vet", "YES!! when do you start"): each
# sentence's first word counts.
_SENTENCE_END = re.compile(r"[.!;\n]+")
# Mentions the message opens with ("@sam where did you park"), as Discord writes them or as clean content shows them.
_LEADING_MENTIONS = re.compile(r"^(?:\s*(?:<[@#][!&]?\d+>|@\S+)[,:]?)+")
# A message that ends in a question particle asks too: Chinese 吗 / 嗎 / 呢, Japanese か, Korean -까.
_FINAL_PARTICLE = re.compile(r"(?:吗|嗎|呢|か|까)[\s.!。！~～…]*$")
# Chinese, Japanese and Korean chat drops the mark too, and asks with a question word wherever it stands in the
# sentence ("看兽医花了多少钱", "什么时候入职"), so a message holding one asks. Not the indefinite and negative uses
# the same words make ("没什么", "什么都行", "何か", "誰も", "뭐든", "언제나"): those are removed first.
_QUESTION_WORD = re.compile(
    "什么|什麼|怎么|怎麼|为什么|為什麼|为啥|為啥|哪|谁|誰|多少|几点|幾點|几个|幾個|几天|幾天|几号|幾號|几岁|幾歲|有没有|有沒有|是不是"
    "|どこ|いつ|だれ|どう|どれ|どの|なぜ|なんで|いくら|何"
    "|뭐|무엇|어디|언제|누구|왜|어떻게|몇|얼마"
)
_NOT_ASKING = re.compile(
    "没什么|沒什麼|任何|不怎么|不怎麼|什么都|什麼都|什么也|什麼也|谁都|誰都|哪儿都|哪裡都|哪里都|多少有点|多少有點"
    "|何か|何も|誰か|誰も|だれか|だれも|どこか|どこも|いつか|いつも|どうも|どうぞ|どうか"
    "|뭐든|무엇이든|어디든|언제나|언제든|누구나|누구든|어떻게든|왜냐하면"
)

# Where a Chinese query is cut before it becomes keyword bigrams (keywords.keyword_terms): question words and
# question particles (simplified and traditional) carry no topic, like English stop words, and a query bigram across
# one ("么时", "候去") matches other messages by accident. Documents keep every bigram. A wider list than the one
# above: it also cuts at particles and measure-word forms, which ask nothing alone. Measured on bench/data/bilingual,
# Chinese keyword-only: R@10 0.735 -> 0.753, R@50 0.894 -> 0.918, MRR@10 0.451 -> 0.516 (R@5 0.612 -> 0.582).
# Cutting at 的/了 too, or dropping the one-character pieces left over, did worse; pronouns and 是 changed nothing.
QUERY_CUT_WORDS = re.compile(
    "什么时候|什麼時候|为什么|為什麼|什么|什麼|怎么样|怎麼樣|怎么|怎麼|怎样|怎樣|哪[里裡儿兒个個些天家条條场場种種位一几幾]?"
    "|多少|几[点點岁歲个個天号號]|幾[点點岁歲个個天号號]|谁|誰|吗|嗎|呢"
)


# Every character a question word above holds: a message with none of them holds no question word, even after the
# indefinite uses are removed (removing text joins what was around it, it adds no character), so most messages of a
# search (about 100 are read each time) skip that removal.
_QUESTION_WORD_CHARACTERS = re.compile(
    "[" + "".join(sorted(set(_QUESTION_WORD.pattern) - {"|"})) + "]")


# A search asks this of about 100 rows (its sources and their next messages), and a channel's recent messages are
# the neighbours of search after search: the answers for the last messages read are kept (a few MB of text at most).
@lru_cache(maxsize=16384)
def asks(content: str) -> bool:
    """True when ``content`` reads as a question: a question mark anywhere, an asking last particle, a Chinese,
    Japanese or Korean question word anywhere, or an English asking first word of a sentence."""
    if _QUESTION_MARK.search(content) or _FINAL_PARTICLE.search(content):
        return True
    if _QUESTION_WORD_CHARACTERS.search(content) and _QUESTION_WORD.search(_NOT_ASKING.sub("", content)):
        return True
    sentences = _SENTENCE_END.split(_LEADING_MENTIONS.sub("", content.lower()))
    return any(first.group() in _ENGLISH_OPENERS for first in map(_FIRST_WORD.search, sentences) if first)


# A question put to the room ("can anyone recommend...", "what is everyone having", "大家觉得呢"), not to whoever its
# asker was talking with: on annotated IRC, the next line of someone the asker had just replied to answers such a
# question 25% of the time, any other question 55% (docs/loans.md, "Whom a reply addresses").
_TO_EVERYONE = re.compile(
    r"\b(?:any ?one|any ?body|every ?one|every ?body|some ?one|some ?body|all of you|y'?all|guys)\b"
    "|大家|各位|有人|有没有人|有沒有人", re.IGNORECASE)


def to_everyone(content: str) -> bool:
    """Whether ``content`` puts its question to everyone in the channel rather than to one person."""
    return _TO_EVERYONE.search(content) is not None


def answers(asker: Hashable, asked: Hashable, after: Sequence[tuple[int, Hashable]]) -> tuple[int, ...]:
    """Which messages may answer a question, of the (row id, author) pairs that come after it, nearest first.

    The next message by someone other than the asker, as a rule (the asker's own next lines are their burst going
    on, not an answer); and when the one asked (``asked``: the author of the message the question follows, if not
    the asker) answers later, past someone else's line, their first message too. Who is asked is a guess (a question
    can turn to someone else), so that next other message is never passed over. Empty when no one else follows.
    """
    others = [(rowid, author) for rowid, author in after if author != asker]
    if not others:
        return ()
    nearest, nearest_author = others[0]
    if asked is None or asked == asker or nearest_author == asked:
        return (nearest,)
    later = next((rowid for rowid, author in others[1:] if author == asked), None)
    return (nearest,) if later is None else (nearest, later)
