"""Terminal progress: a tqdm bar on a terminal, plain lines with the rate and an ETA anywhere else."""

from __future__ import annotations

import asyncio
import io

from cogs.memory.runtime.progress import TerminalProgress, follow
from tests.fixtures.waiting import eventually


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_away_from_a_terminal_a_line_comes_each_tenth_with_an_eta() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress("import #general", 1000, out, clock=clock)
    for done in range(0, 1001, 50):
        clock.now = done / 100  # 100 messages a second
        progress.update(done)
    progress.close()
    lines = out.getvalue().splitlines()
    assert (len(lines), lines[0], lines[-1]) == (
        10, "import #general: 100/1000 (10%), 100 msg/s, about 00:09 left",
        "import #general: 1000/1000 (100%), 100 msg/s, done in 00:10")


def test_a_slow_run_gets_a_line_every_30_seconds_between_tenths() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress("migrate messages", 10_000, out, unit="row", clock=clock)
    clock.now = 31.0
    progress.update(31)
    assert out.getvalue() == "migrate messages: 31/10000 (0%), 1 row/s, about 2:46:09 left\n"


def test_nothing_done_still_says_so_once_at_the_end() -> None:
    out = io.StringIO()
    progress = TerminalProgress("import #general", 2, out, clock=Clock())
    progress.update(0)
    progress.close()
    assert out.getvalue() == "import #general: 0/2 (0%)\n"


def test_the_count_never_goes_back() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress("import #general", 10, out, clock=clock)
    clock.now = 1.0
    progress.update(5)
    progress.update(3)
    assert progress.done == 5


def test_on_a_terminal_it_is_a_tqdm_bar_whose_line_is_ended() -> None:
    out = Terminal()
    progress = TerminalProgress("import #general", 4, out)
    progress.update(4)
    progress.close()
    text = out.getvalue()
    assert ("\r" in text, "import #general: 100%" in text, "4/4" in text, text.endswith("\n")) == (
        True, True, True, True)


async def test_follow_shows_what_is_done_while_the_work_runs_and_at_its_end() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress("ingest", 10, out, clock=clock)
    stored = {"count": 0}
    shown: list[int] = []
    real_update = progress.update

    def update(done: int, note: str = "") -> None:
        shown.append(done)
        real_update(done, note)

    progress.update = update  # type: ignore[method-assign]
    halfway = asyncio.Event()

    async def work() -> str:
        stored["count"], clock.now = 5, 5.0
        await halfway.wait()  # half stored: the rest waits until the test has seen the half shown
        stored["count"], clock.now = 10, 10.0
        return "flushed"

    following = asyncio.create_task(follow(progress, work(), lambda: stored["count"], every=0.01))
    await eventually(lambda: 5 in shown)
    halfway.set()
    assert await following == "flushed"
    progress.close()
    assert shown[-1] == 10 and shown == sorted(shown)
    assert out.getvalue().splitlines() == ["ingest: 5/10 (50%), 1 msg/s, about 00:05 left",
                                           "ingest: 10/10 (100%), 1 msg/s, done in 00:10"]
