"""The dashboard's subject access request: what memory holds of one member in one guild, as counts (their messages per
channel, their opt-out, how often their messages were quoted, by kind: counts, never the log), and a download of the
member's export as the terminal's ``export`` writes it (every channel, named as memory last saw it)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiohttp import web

from ..privacy.member_export import ExportRequest, write_member_export
from ..privacy.subject_access import Readable
from .params import BadParam, required_id
from .state import STATE

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ("add_routes",)

# One part whatever the size: a browser download has no attachment limit.
DOWNLOAD_PART_LIMIT = 2**40
CHUNK = 1 << 20
EVERYTHING = Readable(everything=True)


@runtime_checkable
class MemoryHolder(Protocol):
    """The dashboard's source over the bot's Memory (memory_source.MemorySource); another source has no such page."""

    def memory(self) -> Memory: ...


def _memory(request: web.Request) -> Memory:
    source: object = request.app[STATE].source
    if not isinstance(source, MemoryHolder):
        raise web.HTTPNotFound(text="Subject access needs the bot's memory.")
    return source.memory()


async def _request(memory: Memory, guild_id: int, member_id: int) -> ExportRequest:
    return ExportRequest(guild_id, memory.names.guild_name(guild_id) or str(guild_id), member_id, EVERYTHING,
                         memory.names.channel_names(guild_id), await memory.is_opted_out(guild_id, member_id))


async def page(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    empty: dict[str, Any] = {"title": "Subject access", "holdings": None, "export": None, "quoted": [], "error": None}
    if "guild" not in request.query and "member" not in request.query:
        return state.render("subject_access.html", request, **empty)
    try:
        guild_id, member_id = required_id(request.query, "guild"), required_id(request.query, "member")
    except BadParam as error:
        return state.render("subject_access.html", request, status=400, **{**empty, "error": str(error)})
    memory = _memory(request)
    export = await _request(memory, guild_id, member_id)
    holdings = await memory.subject_access.holdings(guild_id, member_id, EVERYTHING, opted_out=export.opted_out,
                                                    quotations=None)
    kinds = Counter(quote.kind for quote in holdings.quotations)
    return state.render("subject_access.html", request, **{**empty, "holdings": holdings, "export": export,
                                                           "quoted": sorted(kinds.items())})


async def download(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    try:
        guild_id, member_id = required_id(form, "guild"), required_id(form, "member")
    except BadParam as error:
        raise web.HTTPBadRequest(text=str(error)) from None
    memory = _memory(request)
    folder = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="memory-sar-"))
    try:
        result = await write_member_export(memory.subject_access, await _request(memory, guild_id, member_id),
                                           folder, part_limit=DOWNLOAD_PART_LIMIT)
        if result.holds_nothing:
            raise web.HTTPNotFound(text=f"Memory holds nothing of member {member_id} in guild {guild_id}.")
        (part,) = result.parts
        response = web.StreamResponse(headers={"Content-Type": "application/zip",
                                               "Content-Disposition": f'attachment; filename="{part.name}"'})
        await response.prepare(request)
        with part.open("rb") as handle:
            while chunk := await asyncio.to_thread(handle.read, CHUNK):
                await response.write(chunk)
        await response.write_eof()
        return response
    finally:
        await asyncio.to_thread(shutil.rmtree, folder, True)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/subject-access", page)
    router.add_post("/subject-access/export", download)
