"""The dashboard's pages: Overview, Performance, Search, Browse and Controls, rendered on the server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime

from aiohttp import web
from markupsafe import Markup

from ..metrics import PerformanceSeries, Window
from .charts import Line, line_chart
from .controls import forget_done, profile_done, settings_done
from .params import BadParam, browse_limit, optional_date, optional_id, required_id, settings_change
from .source import BrowsePage, GuildOverview, SearchExplanation
from .targets import ask_forget, resolved_search
from .state import SESSION, STATE, who

__all__ = ("FILTERS", "PAGES", "add_routes", "navigation", "performance_charts")

log = logging.getLogger(__name__)

WINDOWS: tuple[Window, ...] = ("hour", "day")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _size(value: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1000
    return str(value)


def _when(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


FILTERS = {"size": _size, "when": _when, "score": _score}


async def overview(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    guilds = await state.source.guild_overviews()
    state.overviews = guilds
    process = await state.source.process_info()
    return state.render("overview.html", request, title="Overview", guilds=guilds, process=process)


RECALLS_WILL_APPEAR = "appears with the first search: /memory search, a recall, or Search here"
RERANKS_WILL_APPEAR = "appears with the first search the reranker scores"
INGEST_WILL_APPEAR = "appears as messages are stored (sampled every 15 s)"


def performance_charts(series: PerformanceSeries) -> list[Markup]:
    """The Performance page's charts, one per figure the issue names, each saying what will appear while empty."""
    times = [point.start for point in series.points]
    points = series.points

    def line(label: str, attribute: str, scale: float = 1.0) -> Line:
        values = [getattr(p, attribute) for p in points]
        return Line(label, [None if v is None else v * scale for v in values])

    return [
        line_chart("First-stage latency", "ms", times, [line("p50", "first_stage_p50_ms"),
                                                        line("p95", "first_stage_p95_ms")], RECALLS_WILL_APPEAR),
        line_chart("Rerank latency", "ms", times, [line("p50", "rerank_p50_ms"), line("p95", "rerank_p95_ms")],
                   RERANKS_WILL_APPEAR),
        line_chart("Reranker time per candidate", "ms", times, [line("ms per candidate", "rerank_ms_per_candidate")],
                   RERANKS_WILL_APPEAR),
        line_chart("Candidates scored per recall", "candidates", times, [line("scored", "scored_per_recall")],
                   RERANKS_WILL_APPEAR),
        line_chart("Score-cache hit rate", "%", times, [line("hits", "cache_hit_rate", 100.0)],
                   RERANKS_WILL_APPEAR),
        line_chart("Ingest rate", "messages/min", times, [line("stored", "ingest_per_min")], INGEST_WILL_APPEAR),
        line_chart("Ingest backlog", "messages", times, [line("waiting", "backlog")], INGEST_WILL_APPEAR),
    ]


async def performance(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    window = request.query.get("window", "hour")
    if window not in WINDOWS:
        raise BadParam("window must be hour or day")
    series = await state.recorder.series_off_loop(window)
    charts = await asyncio.to_thread(performance_charts, series)  # a day's seven charts: ~5 ms of string work
    recalls = sum(point.recalls for point in series.points)
    return state.render("performance.html", request, title="Performance", window=window, windows=WINDOWS,
                        charts=charts, recalls=recalls, step_minutes=int(series.step_s // 60))


async def search(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    guilds = state.overviews or await state.source.guild_overviews()
    wanted = await resolved_search(state.source, request.query)
    result: SearchExplanation | None = None
    channel_names: Mapping[int, str] = {}
    if wanted is not None:
        log.info("Dashboard: search in guild %d, %s", wanted.guild_id, who(request))
        log.debug("Dashboard search query: %r", wanted.query)
        result = await state.source.search(wanted)
        channel_names = await state.source.channel_names(wanted.guild_id)
    return state.render("search.html", request, title="Search", guilds=guilds, form=request.query, result=result,
                        channel_names=channel_names)


async def browse(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    guild_id, channel_id = optional_id(request.query, "guild"), optional_id(request.query, "channel")
    limit = browse_limit(request.query)
    guilds = state.overviews or await state.source.guild_overviews()
    channels: Sequence[int] = ()
    channel_names: Mapping[int, str] = {}
    page: BrowsePage | None = None
    if guild_id is not None:
        channels = await state.source.channel_ids(guild_id)
        channel_names = await state.source.channel_names(guild_id)
    if guild_id is not None and channel_id is not None:
        page = await state.source.browse(guild_id, channel_id, optional_date(request.query, "before"), limit,
                                         optional_id(request.query, "before_id"))
        log.info("Dashboard: browsed channel %d of guild %d, %s", channel_id, guild_id, who(request))
    return state.render("browse.html", request, title="Browse", guilds=guilds, guild_id=guild_id,
                        channel_id=channel_id, channels=channels, channel_names=channel_names, page=page, limit=limit)


async def controls(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    guild_id = optional_id(request.query, "guild")
    guilds = state.overviews or await state.source.guild_overviews()
    settings = await state.source.settings(guild_id) if guild_id is not None else None
    channel_names = await state.source.channel_names(guild_id) if guild_id is not None else {}
    profiles = await state.source.profiles()
    return state.render("controls.html", request, title="Controls", guilds=guilds, guild_id=guild_id,
                        settings=settings, channel_names=channel_names, profiles=profiles)


def _guild_name(guilds: Sequence[GuildOverview], guild_id: int) -> str | None:
    return next((guild.name for guild in guilds if guild.guild_id == guild_id), None)


def _done(request: web.Request, message: str) -> web.Response:
    return request.app[STATE].render("message.html", request, title="Done", message=message)


async def forget_ask(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    asked = await ask_forget(state.source, state.pending, request[SESSION].label, await request.post(), "guild",
                             "target")
    pending = asked.pending
    guilds = state.overviews or await state.source.guild_overviews()
    return state.render("confirm.html", request, title="Confirm", description=pending.description,
                        pending_id=asked.pending_id, kind=pending.kind, preview=asked.preview,
                        guild_name=_guild_name(guilds, pending.guild_id), guild_id=pending.guild_id)


async def forget_confirm(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    form = await request.post()
    pending = state.pending.take(request[SESSION].label, str(form.get("pending", "")))
    if pending is None:
        raise BadParam("That confirmation expired or was already used; ask again from Controls.")
    result = await state.source.forget(pending.kind, pending.guild_id, pending.target_id)
    message = forget_done(result)
    log.info("Dashboard: %s (%s)", message, who(request))
    return _done(request, message)


async def settings_save(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    form = await request.post()
    guild_id = required_id(form, "guild")
    saved = await state.source.change_settings(guild_id, settings_change(form))
    message = settings_done(guild_id, saved)
    log.info("Dashboard: %s (%s)", message, who(request))
    return _done(request, message)


async def profile_switch(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    form = await request.post()
    name = str(form.get("name", "")).strip()
    if not name or len(name) > 100:
        raise BadParam("name must be one of the profiles listed under Controls")
    message = profile_done(await state.source.switch_profile(name))
    log.info("Dashboard: %s (%s)", message, who(request))
    return _done(request, message)


# The pages in the navigation, in its order: (path, label, handler). A new page is one more row here (and its
# template); the navigation (base.html) lists what this holds.
PAGES: tuple[tuple[str, str, Handler], ...] = (
    ("/", "Overview", overview),
    ("/performance", "Performance", performance),
    ("/search", "Search", search),
    ("/browse", "Browse", browse),
    ("/controls", "Controls", controls),
)


def navigation() -> list[tuple[str, str]]:
    return [(path, label) for path, label, _ in PAGES]


def add_routes(router: web.UrlDispatcher) -> None:
    for path, _, handler in PAGES:
        router.add_get(path, handler)
    router.add_post("/controls/forget", forget_ask)
    router.add_post("/controls/forget/confirm", forget_confirm)
    router.add_post("/controls/settings", settings_save)
    router.add_post("/controls/profile", profile_switch)
