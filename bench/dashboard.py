"""How much does the dashboard cost the bot's event loop? Server-side render time of a 50-hit search page on a
100k-message guild, and the event-loop gaps while a browser-like client polls every page.

    python -m bench.dashboard [--json OUT] [--messages 100000] [--renders 200] [--poll-seconds 20]

The dashboard runs on this process's event loop, fed by a fake DashboardSource holding ``--messages`` synthetic
messages (realistic lengths, some hostile markup to escape): the figures are the dashboard's own cost (routing,
guards, templates, escaping, SVG charts), not the memory core's. The poller is a separate process (as a browser
is), so its work does not count against this loop. Gaps are measured as bench.loop measures them: a task that
wakes every millisecond and records how late each wake-up came; the bar there is max_gap_ms < 50. The same
heartbeat runs first for as long with nothing polling (idle_*): on a shared machine, that is the noise floor.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.loop import BAR_MAX_GAP_MS, Heartbeat, percentile

RENDER_BAR_MS = 200.0
WORDS = ("the lake cabin is booked printer broken picnic saturday snacks meeting moved deploy release notes who "
         "knows where keys went tomorrow morning coffee bug fix merged review please").split()
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "<@123> **bold**")
POLLED = ("/", "/performance?window=day", "/search?q=lake+cabin&guild=1&limit=50", "/browse?guild=1&channel=10&limit=100",
          "/api/performance?window=day", "/api/search?q=lake&guild=1&limit=50", "/metrics")


def synthetic_source(count: int):
    """A FakeSource whose answers are computed once: its linear scans are the fake's cost, not the dashboard's."""
    from datetime import UTC, datetime, timedelta

    from tests.fixtures.dashboard import FakeMessage, FakeSource

    class CachedSource(FakeSource):
        def __init__(self, messages) -> None:
            super().__init__(messages)
            self.cache: dict[tuple, object] = {}

        async def _cached(self, key: tuple, compute):
            if key not in self.cache:
                self.cache[key] = await compute()
            return self.cache[key]

        async def search(self, request):
            return await self._cached(("search", request), lambda: FakeSource.search(self, request))

        async def browse(self, guild_id, channel_id, before, limit, before_id=None):
            return await self._cached(("browse", guild_id, channel_id, before, limit, before_id),
                                      lambda: FakeSource.browse(self, guild_id, channel_id, before, limit, before_id))

        async def guild_overviews(self):
            return await self._cached(("overviews",), lambda: FakeSource.guild_overviews(self))

        async def channel_ids(self, guild_id):
            return await self._cached(("channels", guild_id), lambda: FakeSource.channel_ids(self, guild_id))

    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    messages = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60)))
        if i % 97 == 0:
            text += " " + rng.choice(HOSTILE)
        messages.append(FakeMessage(i + 1, 1, 10 + i % 20, 100 + i % 300, f"member{i % 300}", text,
                                    start + timedelta(seconds=30 * i)))
    return CachedSource(messages)


def fill_metrics(recorder, seconds: float = 86_400) -> None:
    """A day of recalls and ingest, so the Performance page draws 7 full charts of 288 points."""
    from cogs.memory.metrics import RecallSample

    now = time.time()
    clock = [now - seconds]
    recorder._clock = lambda: clock[0]
    rng = random.Random(3)
    while clock[0] < now:
        recorder.record_recall(RecallSample(rng.uniform(5, 40), rng.uniform(50, 400), 20, rng.randint(5, 20),
                                            rng.randint(0, 5)))
        recorder.record_ingest(rng.randint(0, 50), rng.randint(0, 200))
        clock[0] += 60
    recorder._clock = time.time


async def render_times(dashboard, renders: int) -> dict[str, float]:
    """The 50-hit search page rendered by the template alone, and whole over HTTP (guards, routing, escaping)."""
    import aiohttp

    from cogs.memory.dashboard.source import SearchRequest
    from tests.fixtures.dashboard import SignedIn

    state = dashboard.state
    result = await state.source.search(SearchRequest("the lake", 1, limit=50))
    assert len(result.recall.hits) == 50
    guilds = await state.source.guild_overviews()
    channel_names = await state.source.channel_names(1)  # as the page names the hits' channels
    template = state.templates.get_template("search.html")
    template_ms = []
    for _ in range(renders):
        started = time.perf_counter()
        html = template.render(csrf="x", path="/search", title="Search", guilds=guilds, form={}, result=result,
                               channel_names=channel_names)
        template_ms.append((time.perf_counter() - started) * 1000)
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        client = SignedIn(dashboard, http)
        await client.login()
        request_ms = []
        for _ in range(renders):
            started = time.perf_counter()
            async with http.get(client.url("/search?q=the+lake&guild=1&limit=50")) as response:
                body = await response.text()
            request_ms.append((time.perf_counter() - started) * 1000)
        assert body.count('class="hit"') == 50
    return {"search50_template_p50_ms": round(statistics.median(template_ms), 2),
            "search50_template_p95_ms": round(percentile(template_ms, 0.95), 2),
            "search50_http_p50_ms": round(statistics.median(request_ms), 2),
            "search50_http_p95_ms": round(percentile(request_ms, 0.95), 2),
            "search50_page_bytes": len(html.encode())}


POLLER = """
import asyncio, sys, time, aiohttp
async def main(base, token, seconds, paths):
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(base + "/login", params={"token": token}) as r:
            assert r.status == 200, r.status
        done, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            for path in paths:
                async with http.get(base + path) as r:
                    await r.read()
                    assert r.status == 200, (path, r.status)
                done += 1
        print(done)
asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4:]))
"""


async def idle_gaps(seconds: float) -> dict[str, float]:
    """The same heartbeat with nothing polling: what this machine's other load costs the loop by itself."""
    heartbeat = Heartbeat()
    heartbeat.start()
    await asyncio.sleep(seconds)
    await heartbeat.stop()
    gaps = heartbeat.gaps_ms
    return {"idle_max_gap_ms": round(max(gaps), 2), "idle_p99_gap_ms": round(percentile(gaps, 0.99), 2)}


async def loop_gaps(dashboard, seconds: float) -> dict[str, float]:
    token = await asyncio.to_thread(dashboard.state.tokens.issue)
    heartbeat = Heartbeat()
    heartbeat.start()
    poller = await asyncio.create_subprocess_exec(
        sys.executable, "-c", POLLER, f"http://127.0.0.1:{dashboard.port}", token, str(seconds), *POLLED,
        stdout=asyncio.subprocess.PIPE)
    out, _ = await poller.communicate()
    await heartbeat.stop()
    if poller.returncode != 0:
        raise RuntimeError("the poller failed")
    gaps = heartbeat.gaps_ms
    return {"poll_seconds": seconds, "requests": int(out.decode().strip()),
            "requests_per_s": round(int(out.decode().strip()) / seconds, 1),
            "max_gap_ms": round(max(gaps), 2), "p99_gap_ms": round(percentile(gaps, 0.99), 2),
            "p50_gap_ms": round(statistics.median(gaps), 2), "gap_bar_ms": BAR_MAX_GAP_MS}


async def _warm(dashboard, path: str) -> None:
    import aiohttp

    from tests.fixtures.dashboard import SignedIn

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        client = SignedIn(dashboard, http)
        await client.login()
        async with http.get(client.url(path)) as response:
            assert response.status == 200, (path, response.status)


async def run(args: argparse.Namespace) -> dict[str, object]:
    from bot import freeze_startup_objects
    from launcher import tune_interpreter
    from cogs.memory.dashboard.config import DashboardConfig
    from cogs.memory.dashboard.server import Dashboard

    source = synthetic_source(args.messages)
    # As the bot runs: a short GIL switch interval, and no full collections started by allocation counts (one
    # walks every object: 30-60 ms here with 100k messages held, and the bot never lets one start that way).
    tune_interpreter()
    freeze_startup_objects()
    with tempfile.TemporaryDirectory() as data_dir:
        dashboard = Dashboard(source, DashboardConfig(port=0, data_dir=Path(data_dir)))
        fill_metrics(dashboard.recorder)
        await dashboard.start()
        try:
            await dashboard.sample_once(None, refresh_overviews=True)
            for path in POLLED:  # warm the fake's cache: the poll then measures the dashboard alone
                await _warm(dashboard, path)
            figures: dict[str, object] = {"messages": args.messages, "source": "fake (synthetic messages)"}
            figures.update(await render_times(dashboard, args.renders))
            figures.update(await idle_gaps(args.poll_seconds))
            figures.update(await loop_gaps(dashboard, args.poll_seconds))
        finally:
            await dashboard.stop()
    figures["render_bar_ms"] = RENDER_BAR_MS
    figures["cpu"] = _cpu()
    return figures


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--messages", type=int, default=100_000, help="messages in the guild (default: %(default)s)")
    parser.add_argument("--renders", type=int, default=200, help="renders timed (default: %(default)s)")
    parser.add_argument("--poll-seconds", type=float, default=20.0, help="how long the client polls")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
