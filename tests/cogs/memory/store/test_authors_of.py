"""rows.authors_of: a store's rows of each name each author wrote under, folded into one row an author (what
``Memory.authors`` lists), whatever order the rows come in."""

from __future__ import annotations

from cogs.memory.store.rows import AuthorSeen, authors_of


def test_each_author_once_with_every_message_and_the_newest_name() -> None:
    names = [AuthorSeen(7, "alice", 2, 300.0), AuthorSeen(7, "Alice", 5, 100.0), AuthorSeen(9, "bob", 7, 50.0),
             AuthorSeen(8, "cat", 7, 60.0)]
    assert authors_of(names) == [AuthorSeen(7, "alice", 7, 300.0), AuthorSeen(8, "cat", 7, 60.0),
                                 AuthorSeen(9, "bob", 7, 50.0)]
    assert authors_of(reversed(names)) == authors_of(names)


def test_of_names_last_used_at_one_time_the_first_in_code_point_order_wins() -> None:
    tied = [AuthorSeen(7, "alice", 1, 300.0), AuthorSeen(7, "Zed", 1, 300.0), AuthorSeen(7, "ann", 4, 10.0)]
    assert authors_of(tied) == authors_of(reversed(tied)) == [AuthorSeen(7, "Zed", 6, 300.0)]
