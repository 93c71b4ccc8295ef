"""What every request handler reaches: the dashboard's state (``request.app[STATE]``), the signed-in session
(``request[SESSION]``), and who is asking, as the log names them. The server, the pages and the API all read it here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from aiohttp import web

from ..metrics import MetricsRecorder
from .auth import LoginTokens, Session, Sessions
from .config import DashboardConfig
from .controls import PendingForgets
from .source import DashboardSource, GuildOverview

__all__ = ("SESSION", "STATE", "DashboardState", "who")


@dataclass(slots=True)
class DashboardState:
    """What every handler reaches through ``request.app[STATE]``; the mutable parts are the event loop's."""

    source: DashboardSource
    recorder: MetricsRecorder
    config: DashboardConfig
    sessions: Sessions
    tokens: LoginTokens
    templates: jinja2.Environment
    pending: PendingForgets = field(default_factory=PendingForgets)
    overviews: Sequence[GuildOverview] = ()
    static: dict[str, bytes] = field(default_factory=dict)
    notice: str | None = None  # a line every signed-in page shows (the standalone dashboard's: no Discord behind it)

    def render(self, name: str, request: web.Request, status: int = 200, **context: Any) -> web.Response:
        session: Session | None = request.get(SESSION)
        html = self.templates.get_template(name).render(csrf=session.csrf if session else "", path=request.path,
                                                        notice=self.notice if session else None, **context)
        return web.Response(text=html, status=status, content_type="text/html")


STATE: web.AppKey[DashboardState] = web.AppKey("dashboard", DashboardState)
SESSION: web.RequestKey[Session] = web.RequestKey("session", Session)


def who(request: web.Request) -> str:
    """The actor in the log: the session's label and the peer, never a cookie or token."""
    session: Session | None = request.get(SESSION)
    return f"session {session.label if session else '-'} from {request.remote}"
