"""Whether a chat message asks something: what answers it is usually the message after it in the channel."""

from __future__ import annotations

import re

__all__ = ("asks",)

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
# Mentions the message opens with ("@sam where did you park"), as Discord writes them or as clean content shows them.
_LEADING_MENTIONS = re.compile(r"^(?:\s*(?:<[@#][!&]?\d+>|@\S+)[,:]?)+")
# So does one that ends in a question particle: Chinese 吗 / 嗎 / 呢, Japanese か, Korean -까.
_FINAL_PARTICLE = re.compile(r"(?:吗|嗎|呢|か|까)[\s.!。！~～…]*$")


def asks(content: str) -> bool:
    """True when ``content`` reads as a question: a question mark anywhere, or an asking first word or last
    particle."""
    if _QUESTION_MARK.search(content) or _FINAL_PARTICLE.search(content):
        return True
    first = _FIRST_WORD.search(_LEADING_MENTIONS.sub("", content.lower()))
    return first is not None and first.group() in _ENGLISH_OPENERS
