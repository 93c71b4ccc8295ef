"""search/timed_cache.py: values kept a while, concurrent misses sharing one load, failures kept by no one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from cogs.memory.search.timed_cache import TimedCache


class Gated:
    """A loader that counts its loads and holds each open until ``release`` is set; ``started`` is set on entry."""

    def __init__(self, value: str = "value", error: Exception | None = None) -> None:
        self.value, self.error = value, error
        self.loads = 0
        self.started, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self) -> str:
        self.loads += 1
        self.started.set()
        await self.release.wait()
        if self.error is not None:
            raise self.error
        return f"{self.value} {self.loads}"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_concurrent_misses_of_a_key_share_one_load() -> None:
    cache: TimedCache[str, str] = TimedCache(60.0)
    load = Gated()
    getters = [asyncio.create_task(cache.get("key", load)) for _ in range(5)]
    await load.started.wait()
    load.release.set()
    assert await asyncio.gather(*getters) == ["value 1"] * 5
    assert load.loads == 1


async def test_a_failed_load_reaches_every_waiter_and_is_not_kept() -> None:
    cache: TimedCache[str, str] = TimedCache(60.0)
    failing = Gated(error=RuntimeError("database gone"))
    getters = [asyncio.create_task(cache.get("key", failing)) for _ in range(3)]
    await failing.started.wait()
    failing.release.set()
    outcomes = await asyncio.gather(*getters, return_exceptions=True)
    assert [str(outcome) for outcome in outcomes] == ["database gone"] * 3
    assert failing.loads == 1
    working = Gated("again")
    working.release.set()
    assert await cache.get("key", working) == "again 1"


async def test_a_value_is_loaded_again_once_its_time_has_passed() -> None:
    clock = Clock()
    cache: TimedCache[str, str] = TimedCache(60.0, clock=clock)
    load = Gated()
    load.release.set()
    assert await cache.get("key", load) == "value 1"
    clock.now += 59.9
    assert await cache.get("key", load) == "value 1"
    clock.now += 0.1
    assert await cache.get("key", load) == "value 2"


async def test_a_time_to_live_read_per_call_applies_at_once() -> None:
    ttl = {"s": 600.0}
    cache: TimedCache[str, str] = TimedCache(lambda: ttl["s"], clock=Clock())
    load = Gated()
    load.release.set()
    assert await cache.get("key", load) == "value 1"
    assert await cache.get("key", load) == "value 1"
    ttl["s"] = 0.0
    assert await cache.get("key", load) == "value 2"


async def test_a_cancelled_waiter_leaves_the_others_their_value() -> None:
    cache: TimedCache[str, str] = TimedCache(60.0)
    load = Gated()
    leaving, staying = (asyncio.create_task(cache.get("key", load)) for _ in range(2))
    await load.started.wait()
    leaving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaving
    load.release.set()
    assert await staying == "value 1"
    assert await cache.get("key", Gated("unused")) == "value 1"
    assert load.loads == 1


def counting(cache: TimedCache[str, int], loads: dict[str, int]) -> Callable[[str], Awaitable[None]]:
    """A get of ``cache`` whose load counts, in ``loads``, how often each key was loaded (and gives that count)."""

    async def get(key: str) -> None:
        async def load() -> int:
            loads[key] = loads.get(key, 0) + 1
            return loads[key]
        await cache.get(key, load)
    return get


async def test_past_its_bound_the_least_recently_used_value_is_dropped() -> None:
    cache: TimedCache[str, int] = TimedCache(60.0, max_entries=2, clock=Clock())
    loads: dict[str, int] = {}
    get = counting(cache, loads)

    for key in ("a", "b", "a", "c"):
        await get(key)
    assert (len(cache), loads) == (2, {"a": 1, "b": 1, "c": 1})
    # "a" was used after "b", so "b" went when "c" came: "a" is still kept, "b" is read again.
    await get("a")
    await get("b")
    assert loads == {"a": 1, "b": 2, "c": 1}


async def test_fresh_gives_a_kept_value_only_while_it_is_fresh_and_never_loads() -> None:
    clock = Clock()
    cache: TimedCache[str, str] = TimedCache(60.0, clock=clock)
    assert cache.fresh("key") is None
    load = Gated()
    load.release.set()
    await cache.get("key", load)
    assert cache.fresh("key") == "value 1"
    clock.now += 60.0
    assert cache.fresh("key") is None
    assert load.loads == 1


async def test_fresh_marks_a_value_used_as_get_does() -> None:
    cache: TimedCache[str, int] = TimedCache(60.0, max_entries=2, clock=Clock())
    loads: dict[str, int] = {}
    get = counting(cache, loads)

    await get("a")
    await get("b")
    assert cache.fresh("a") == 1
    await get("c")  # "a" was read after "b", so "b" goes
    assert (cache.fresh("a"), cache.fresh("b")) == (1, None)
