"""PostingCounts: a term's count is read once a minute, not once a search; bounded; cleared on demand."""

from __future__ import annotations

from cogs.memory.store.sqlite.postings import PostingCounts


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Reads:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return 10 * self.calls


def test_a_count_is_read_once_while_it_is_kept_and_again_after() -> None:
    clock, read = Clock(), Reads()
    counts = PostingCounts(keep_s=60.0, clock=clock)
    assert counts.count('"melanie"', 2001, read) == 10
    clock.now = 59.9
    assert counts.count('"melanie"', 2001, read) == 10
    clock.now = 60.0
    assert counts.count('"melanie"', 2001, read) == 20
    assert read.calls == 2


def test_another_cap_is_another_count() -> None:
    read = Reads()
    counts = PostingCounts(clock=Clock())
    assert (counts.count('"a"', 11, read), counts.count('"a"', 21, read)) == (10, 20)


def test_past_its_bound_the_least_recently_used_count_goes() -> None:
    read = Reads()
    counts = PostingCounts(max_entries=2, clock=Clock())
    for term in ('"a"', '"b"', '"a"', '"c"'):
        counts.count(term, 5, read)
    assert len(counts) == 2 and read.calls == 3
    counts.count('"a"', 5, read)  # used after "b": still kept
    assert read.calls == 3
    counts.count('"b"', 5, read)
    assert read.calls == 4


def test_kept_for_nothing_reads_every_time_and_clear_forgets() -> None:
    read = Reads()
    uncached = PostingCounts(keep_s=0.0, clock=Clock())
    uncached.count('"a"', 5, read)
    uncached.count('"a"', 5, read)
    assert read.calls == 2
    counts = PostingCounts(clock=Clock())
    counts.count('"a"', 5, read)
    counts.clear()
    counts.count('"a"', 5, read)
    assert read.calls == 4
