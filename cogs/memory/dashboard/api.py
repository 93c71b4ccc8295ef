"""The JSON API under /api/: everything the pages show, behind the same session; changes need X-CSRF-Token."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from aiohttp import web

from .controls import CONFIRM_TTL_S, forget_done, profile_done, settings_done
from .params import BadParam, browse_limit, optional_date, optional_id, required_id, settings_change
from .source import Hit, SearchExplanation
from .state import SESSION, STATE, who
from .targets import ask_forget, resolved_search

__all__ = ("add_routes", "explained", "to_json")

log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def to_json(value: Any, status: int = 200) -> web.Response:
    return web.json_response(_plain(value), status=status, dumps=json.dumps)


def _hit(hit: Hit, rank_after: int | None) -> dict[str, Any]:
    return {"message_id": hit.message_id, "guild_id": hit.guild_id, "channel_id": hit.channel_id,
            "author_id": hit.author_id, "author_name": hit.author_name, "content": hit.content,
            "created_at": hit.created_at, "first_stage_score": hit.score, "sources": hit.sources, "parts": hit.parts,
            "rerank_score": hit.rerank_score, "rank_before": hit.rank, "rank_after": rank_after,
            "pooled_by": hit.pooled_by}


def explained(result: SearchExplanation) -> dict[str, Any]:
    """A search as the API sends it: each hit with its rank before and after the reranker (None: not reranked), the
    stages' times, and what the reranker did (None where it took nothing)."""
    recall, figures = result.recall, result.recall.rerank
    reranked = recall.reranked
    return {"request": result.request,
            "hits": [_hit(hit, position if reranked else None) for position, hit in enumerate(recall.hits, start=1)],
            "reranked": reranked, "total_ms": recall.total_ms, "first_stage_ms": recall.first_stage_ms,
            "first_stage_candidates": recall.candidates,
            "rerank_ms": None if figures is None else figures.ms,
            "candidates_offered": None if figures is None else figures.offered,
            "candidates_scored": None if figures is None else figures.scored,
            "cache_hits": None if figures is None else figures.cached}


async def _body(request: web.Request) -> Mapping[str, Any]:
    if request.content_type != "application/json":
        raise BadParam("send a JSON object (Content-Type: application/json)")
    try:
        body = await request.json()
    except json.JSONDecodeError:
        raise BadParam("the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise BadParam("send a JSON object")
    return body


async def session(request: web.Request) -> web.StreamResponse:
    """The CSRF token a script sends back as X-CSRF-Token."""
    return to_json({"csrf_token": request[SESSION].csrf, "expires_at": request[SESSION].expires_at})


async def overview(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    guilds = await state.source.guild_overviews()
    state.overviews = guilds
    return to_json({"guilds": guilds, "process": await state.source.process_info()})


async def performance(request: web.Request) -> web.StreamResponse:
    window = request.query.get("window", "hour")
    if window not in ("hour", "day"):
        raise BadParam("window must be hour or day")
    series = await request.app[STATE].recorder.series_off_loop(window)  # type: ignore[arg-type]
    return to_json(await asyncio.to_thread(_plain, series))


async def search(request: web.Request) -> web.StreamResponse:
    wanted = await resolved_search(request.app[STATE].source, request.query)
    if wanted is None:
        raise BadParam("q is required")
    log.info("Dashboard API: search in guild %d, %s", wanted.guild_id, who(request))
    log.debug("Dashboard API search query: %r", wanted.query)
    return to_json(explained(await request.app[STATE].source.search(wanted)))


async def channels(request: web.Request) -> web.StreamResponse:
    guild_id = required_id(request.match_info, "guild")
    source = request.app[STATE].source
    names = await source.channel_names(guild_id)
    return to_json({"guild_id": guild_id, "channel_ids": await source.channel_ids(guild_id),
                    "channel_names": {str(channel_id): name for channel_id, name in sorted(names.items())}})


async def browse(request: web.Request) -> web.StreamResponse:
    query = request.query
    page = await request.app[STATE].source.browse(required_id(query, "guild"), required_id(query, "channel"),
                                                  optional_date(query, "before"), browse_limit(query),
                                                  optional_id(query, "before_id"))
    log.info("Dashboard API: browsed channel %d of guild %d, %s", page.channel_id, page.guild_id, who(request))
    return to_json(page)


async def settings(request: web.Request) -> web.StreamResponse:
    guild_id = required_id(request.query, "guild")
    return to_json({"guild_id": guild_id, "settings": await request.app[STATE].source.settings(guild_id)})


async def settings_save(request: web.Request) -> web.StreamResponse:
    body = await _body(request)
    guild_id = required_id(body, "guild_id")
    saved = await request.app[STATE].source.change_settings(guild_id, settings_change(body))
    message = settings_done(guild_id, saved)
    log.info("Dashboard API: %s (%s)", message, who(request))
    return to_json({"message": message, "settings": saved})


async def profiles(request: web.Request) -> web.StreamResponse:
    return to_json({"profiles": await request.app[STATE].source.profiles()})


async def profile_switch(request: web.Request) -> web.StreamResponse:
    name = str((await _body(request)).get("name", "")).strip()
    if not name or len(name) > 100:
        raise BadParam("name must be one of GET /api/profiles")
    result = await request.app[STATE].source.switch_profile(name)
    message = profile_done(result)
    log.info("Dashboard API: %s (%s)", message, who(request))
    return to_json({"message": message, "result": result}, status=200 if result.switched else 409)


async def forget_ask(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    asked = await ask_forget(state.source, state.pending, request[SESSION].label, await _body(request), "guild_id",
                             "target_id")
    return to_json({"pending_id": asked.pending_id, "will_forget": asked.pending.description,
                    "preview": asked.preview, "expires_in_s": CONFIRM_TTL_S})


async def forget_confirm(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    body = await _body(request)
    pending = state.pending.take(request[SESSION].label, str(body.get("pending_id", "")))
    if pending is None:
        raise BadParam("pending_id is unknown, expired or used; POST /api/forget again")
    result = await state.source.forget(pending.kind, pending.guild_id, pending.target_id)
    message = forget_done(result)
    log.info("Dashboard API: %s (%s)", message, who(request))
    return to_json({"message": message, "result": result})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/api/session", session)
    router.add_get("/api/overview", overview)
    router.add_get("/api/performance", performance)
    router.add_get("/api/search", search)
    router.add_get("/api/guilds/{guild}/channels", channels)
    router.add_get("/api/browse", browse)
    router.add_get("/api/settings", settings)
    router.add_post("/api/settings", settings_save)
    router.add_get("/api/profiles", profiles)
    router.add_post("/api/profile", profile_switch)
    router.add_post("/api/forget", forget_ask)
    router.add_post("/api/forget/confirm", forget_confirm)
