"""The keyword side's terms (search/terms.py): the Han characters searched alone."""

from __future__ import annotations

from cogs.memory.search.terms import characters_alone


def test_a_han_bigram_no_message_holds_is_searched_by_its_characters() -> None:
    # 艺课 straddles 陶艺 and 课; 陶艺 is found, so only 课 is searched alone.
    assert characters_alone({"陶艺": 3, "艺课": 0, "钱": 2}) == ["课"]
    assert characters_alone({"报名": 0, "比赛": 0}) == ["报", "名", "比", "赛"]
    assert characters_alone({"pizza": 0, "的陶": 0}) == ["陶"]  # Latin words and function characters stay whole
