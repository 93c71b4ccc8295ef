"""bench.paired: two systems compared question by question, with a bootstrap interval of their mean difference."""

from __future__ import annotations

import pytest

from bench.paired import paired


def test_the_same_scores_differ_by_nothing_and_help_no_question() -> None:
    same = paired([1.0, 0.5, 0.0], [1.0, 0.5, 0.0])
    assert (same.mean, same.low, same.high, same.better, same.worse) == (0.0, 0.0, 0.0, 0, 0)


def test_a_system_better_on_every_question_by_as_much_has_no_spread() -> None:
    better = paired([1.0] * 40, [0.0] * 40)
    assert better.low == pytest.approx(1.0) and better.high == pytest.approx(1.0)
    assert (better.better, better.worse) == (40, 0)


def test_the_interval_holds_the_mean_and_narrows_with_more_questions() -> None:
    first, second = [1.0, 0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0, 0.0]  # helps two questions, hurts one
    few, many = paired(first, second), paired(first * 20, second * 20)
    assert (few.better, few.worse, many.better, many.worse) == (2, 1, 40, 20)
    assert few.mean == pytest.approx(0.2) and many.mean == pytest.approx(0.2)
    assert few.low < 0.0 < 0.2 < few.high  # on five questions one more helped than hurt is noise
    assert few.low < many.low < 0.2 < many.high < few.high
    assert many.low > 0.0  # the same pattern on a hundred questions is not


def test_a_seed_gives_the_same_interval_again() -> None:
    first, second = [0.3, 0.9, 0.1, 0.0, 0.5, 1.0], [0.2, 1.0, 0.1, 0.4, 0.0, 0.0]
    assert paired(first, second) == paired(first, second)
    assert paired(first, second, seed=1).mean == paired(first, second).mean


def test_questions_that_do_not_pair_are_refused() -> None:
    with pytest.raises(ValueError, match="answered 2 and 3"):
        paired([1.0, 0.0], [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="no question"):
        paired([], [])
    with pytest.raises(ValueError, match="draws"):
        paired([1.0], [0.0], draws=0)
