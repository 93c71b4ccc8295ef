"""One table of the scripts memory treats apart, as Unicode blocks: the keyword side (keywords.py) and the embedding
model's coverage (coverage.py) build their character classes from it, each for its own job."""

from __future__ import annotations

__all__ = ("HAN", "HAN_MARKS", "HANGUL", "KANA", "LATIN", "SOUTHEAST_ASIAN", "Blocks", "ranges")

Blocks = tuple[tuple[int, int], ...]

# Chinese characters (CJK Unified Ideographs, extension A, compatibility ideographs, extensions B and on).
HAN: Blocks = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F))
# 々 〆 〇: written inside Han words (iteration mark, closing mark, ideographic zero).
HAN_MARKS: Blocks = ((0x3005, 0x3007),)
# Hiragana, katakana and their phonetic extensions.
KANA: Blocks = ((0x3040, 0x30FF), (0x31F0, 0x31FF))
# Hangul jamo, compatibility jamo, jamo extensions A and B, and the syllables.
HANGUL: Blocks = ((0x1100, 0x11FF), (0x3131, 0x318E), (0xA960, 0xA97F), (0xAC00, 0xD7A3), (0xD7B0, 0xD7FF))
# Thai, Lao, Myanmar and Khmer: written without spaces, a letter carrying its vowel and tone marks.
SOUTHEAST_ASIAN: Blocks = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF))
# Basic Latin letters, Latin-1 letters (without × and ÷), Latin Extended-A and B, Latin Extended Additional.
LATIN: Blocks = ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F), (0x1E00, 0x1EFF))


def ranges(*tables: Blocks) -> str:
    """A regex character class body holding every code point of ``tables`` (whole blocks, whatever their category)."""
    return "".join(chr(first) if first == last else f"{chr(first)}-{chr(last)}" for table in tables
                   for first, last in table)
