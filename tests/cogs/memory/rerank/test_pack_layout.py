"""The packed row's layout: each tail sees the prefix and its own earlier tokens, and continues the prefix."""

import torch

from cogs.memory.rerank.local import _pack_layout


def test_each_tail_sees_the_prefix_and_its_own_earlier_tokens_only():
    mask, positions, last = _pack_layout(3, [2, 1, 3], "cpu")

    expected = torch.zeros((6, 9), dtype=torch.bool)
    expected[:, :3] = True
    for start, n in ((0, 2), (2, 1), (3, 3)):
        expected[start : start + n, 3 + start : 3 + start + n] = torch.ones((n, n), dtype=torch.bool).tril()
    assert torch.equal(mask, expected)
    assert positions.tolist() == [3, 4, 3, 3, 4, 5]
    assert last.tolist() == [1, 2, 5]


def test_without_a_prefix_tails_start_at_position_zero():
    mask, positions, last = _pack_layout(0, [1, 2], "cpu")

    assert mask.tolist() == [[True, False, False], [False, True, False], [False, True, True]]
    assert positions.tolist() == [0, 0, 1]
    assert last.tolist() == [0, 2]
