"""PurgeScheduler: a stream of forgets costs one purge, and a purge that could not finish is tried again."""

from __future__ import annotations

from cogs.memory.privacy.purge_schedule import PurgeScheduler


async def test_a_stream_of_forgets_costs_one_background_purge() -> None:
    runs: list[int] = []

    async def count_purge() -> bool:
        runs.append(1)
        return True

    scheduler = PurgeScheduler(count_purge, delay=0.0)
    for _ in range(5):
        scheduler.soon()
    await scheduler.wait_idle()
    await scheduler.close()
    assert len(runs) == 1


async def test_a_purge_that_could_not_finish_is_tried_again() -> None:
    outcomes = [False, True]

    async def flaky_purge() -> bool:
        return outcomes.pop(0)

    scheduler = PurgeScheduler(flaky_purge, delay=0.0)
    scheduler.soon()
    await scheduler.wait_idle()
    await scheduler.close()
    assert outcomes == []
