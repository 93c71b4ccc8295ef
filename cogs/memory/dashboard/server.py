"""The dashboard's web server: an aiohttp app on the bot's event loop, its guards (session, CSRF, Host, security
headers), sign-in, static files and /metrics; ``Dashboard`` starts and stops it."""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

import jinja2
from aiohttp import web
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..metrics import MetricsRecorder
from ..runtime.safe_text import redacted
from . import api, subject_access, views
from .auth import LoginTokens, Sessions, csrf_matches
from .config import DashboardConfig
from .gauges import OverviewCollector
from .history import PerformanceHistory
from .params import BadParam
from .source import DashboardSource, SourceUnavailable
from .state import SESSION, STATE, DashboardState, who

__all__ = ("COOKIE_NAME", "Dashboard", "build_app")

log = logging.getLogger(__name__)

COOKIE_NAME = "memory_dashboard_session"
PACKAGE_DIR = Path(__file__).resolve().parent
STATIC_TYPES = {".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png"}
MAX_BODY_BYTES = 64 * 1024
SAMPLE_INTERVAL_S = 15.0
OVERVIEW_EVERY = 4  # samples: the per-guild Prometheus gauges refresh each minute
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Served without a session (it holds no data), so that the 401, used-link and signed-out pages are styled too.
STYLESHEET = "/static/dashboard.css"
SECURITY_HEADERS = {
    # No script at all: the pages are server-rendered and the charts are inline SVG.
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
NOT_SIGNED_IN = ("Not signed in (or the session expired). Get a sign-in link: run "
                 "`python -m cogs.memory dashboard-link`, or look for it in the bot's log.")


def problem(request: web.Request, status: int, message: str) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": message}, status=status, dumps=json.dumps)
    return request.app[STATE].render("message.html", request, status=status, title=f"Error {status}",
                                     message=message)


def _host_allowed(request: web.Request, config: DashboardConfig) -> bool:
    host = request.host.rsplit(":", 1)[0] if not request.host.endswith("]") else request.host
    host = host.strip("[]").lower()
    return host in config.allowed_hosts()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Security headers on every answer; Host, session and CSRF checks before any handler runs."""
    state = request.app[STATE]
    try:
        response = await _guarded(request, handler, state)
    except web.HTTPException as exc:  # the router's 404 and 405, a body over the cap (413)
        response = web.Response(status=exc.status, text=exc.text, headers=exc.headers)
    except Exception:
        log.exception("Dashboard: %s %s failed (%s)", request.method, request.path, who(request))
        response = problem(request, 500, "Something went wrong; the bot's log has the details.")
    response.headers.update(SECURITY_HEADERS)
    return response


def _scrape_with_token(request: web.Request, config: DashboardConfig) -> bool:
    """A /metrics request that carries the configured bearer token."""
    return (request.path == "/metrics" and config.metrics_token is not None
            and hmac.compare_digest(request.headers.get("Authorization", "").encode(),
                                    f"Bearer {config.metrics_token}".encode()))


async def _guarded(request: web.Request, handler: Handler, state: DashboardState) -> web.StreamResponse:
    # The Host check keeps a DNS-rebinding page (a browser's) off the pages; a browser never sends the scraper's
    # token, and a scraper asks for the bound address by whatever name: with the token, any Host is served.
    if not _host_allowed(request, state.config) and not _scrape_with_token(request, state.config):
        log.warning("Dashboard refused a request for host %r from %s", request.host[:100], request.remote)
        return web.Response(status=421, text="Misdirected request: this host name is not the dashboard's.")
    if request.path in ("/login", "/metrics"):  # sign-in and the scraper carry their own credentials
        return await handler(request)
    if request.path == STYLESHEET and request.method in SAFE_METHODS:  # the package's own CSS, for the error pages
        return await handler(request)
    session = state.sessions.get(request.cookies.get(COOKIE_NAME))
    if session is None:
        return problem(request, 401, NOT_SIGNED_IN)
    request[SESSION] = session
    if request.method not in SAFE_METHODS:
        if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            log.warning("Dashboard refused a cross-site %s %s (%s)", request.method, request.path, who(request))
            return problem(request, 403, "Refused: a request from another site.")
        given = request.headers.get("X-CSRF-Token")
        if given is None and request.content_type == "application/x-www-form-urlencoded":
            given = (await request.post()).get("csrf_token")  # type: ignore[assignment]
        if not csrf_matches(session, given if isinstance(given, str) else None):
            log.warning("Dashboard refused %s %s without a valid CSRF token (%s)", request.method, request.path,
                        who(request))
            return problem(request, 403, "Refused: the form's CSRF token is missing or wrong. Reload the page.")
    try:
        return await handler(request)
    except SourceUnavailable as exc:
        return problem(request, 503, str(exc))
    except BadParam as exc:
        return problem(request, 400, str(exc))


async def login(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    token = request.query.get("token", "")
    if not await asyncio.to_thread(state.tokens.consume, token):
        log.warning("Dashboard refused a sign-in link (unknown, used or expired) from %s", request.remote)
        return problem(request, 401, "This sign-in link is used, expired or wrong. Get a new one: run "
                                     "`python -m cogs.memory dashboard-link`.")
    cookie, session = state.sessions.open()
    request[SESSION] = session
    log.info("Dashboard: signed in, %s", who(request))
    response = web.Response(status=303, headers={"Location": "/"})
    response.set_cookie(COOKIE_NAME, cookie, max_age=int(state.config.session_ttl_s), path="/", httponly=True,
                        samesite="Strict", secure=state.config.secure_cookies or request.secure)
    return response


async def logout(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    state.sessions.close(request.cookies.get(COOKIE_NAME))
    log.info("Dashboard: signed out, %s", who(request))
    del request[SESSION]  # the page is the signed-out visitor's: no navigation, no form
    response = state.render("message.html", request, title="Signed out",
                            message="Signed out. Get a new sign-in link to come back: run `python -m cogs.memory "
                                    "dashboard-link`.")
    response.del_cookie(COOKIE_NAME, path="/")
    return response


async def static(request: web.Request) -> web.StreamResponse:
    """Only the files the package ships, by exact name: nothing a path can climb out of."""
    name = request.match_info["name"]
    body = request.app[STATE].static.get(name)
    if body is None:
        return problem(request, 404, "No such file.")
    return web.Response(body=body, content_type=STATIC_TYPES[Path(name).suffix])


def _is_loopback(remote: str | None) -> bool:
    try:
        return remote is not None and ipaddress.ip_address(remote).is_loopback
    except ValueError:
        return False


async def metrics(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE]
    if state.config.metrics_token is not None:
        if not _scrape_with_token(request, state.config):
            return web.Response(status=401, text="Send Authorization: Bearer <MEMORY_DASHBOARD_METRICS_TOKEN>.\n")
    elif not _is_loopback(request.remote):
        return web.Response(status=403, text="Set MEMORY_DASHBOARD_METRICS_TOKEN to scrape from elsewhere.\n")
    return web.Response(body=generate_latest(state.recorder.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})


def templates() -> jinja2.Environment:
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(PACKAGE_DIR / "templates"), autoescape=True,
                                     undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    environment.filters.update(views.FILTERS)
    environment.globals["pages"] = views.navigation()
    return environment


def _static_files() -> dict[str, bytes]:
    folder = PACKAGE_DIR / "static"
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.suffix in STATIC_TYPES}


def build_app(state: DashboardState) -> web.Application:
    state.static = _static_files()
    app = web.Application(middlewares=[guard], client_max_size=MAX_BODY_BYTES)
    app[STATE] = state
    state.recorder.registry.register(OverviewCollector(lambda: state.overviews))
    app.router.add_get("/login", login)
    app.router.add_post("/logout", logout)
    app.router.add_get("/static/{name}", static)
    app.router.add_get("/metrics", metrics)
    views.add_routes(app.router)
    api.add_routes(app.router)
    subject_access.add_routes(app.router)
    return app


class Dashboard:
    """The web dashboard on the running event loop: ``start()`` binds where configured and logs a sign-in link,
    ``stop()`` closes it. Samples the ingest figures meanwhile."""

    def __init__(self, source: DashboardSource, config: DashboardConfig,
                 recorder: MetricsRecorder | None = None, *, notice: str | None = None,
                 history_origin: str = "bot") -> None:
        self.config = config
        self.recorder = recorder or MetricsRecorder()
        # The Performance history in the database, by process kind (the bot's, the standalone dashboard's).
        self.history = PerformanceHistory(source, self.recorder, history_origin)
        self.state = DashboardState(source, self.recorder, config, Sessions(config.session_ttl_s),
                                    LoginTokens(config.token_dir, config.login_ttl_s), templates(), notice=notice)
        self._runner: web.AppRunner | None = None
        self._sampler: asyncio.Task[None] | None = None
        self.port: int | None = None
        self.first_link = ""  # the sign-in link start() logged (MEMORY_DASHBOARD_URL's user:password@ left out)

    async def start(self) -> str:
        """Serve; returns the base URL. The sign-in link goes to the log (the one secret the log may hold)."""
        runner = web.AppRunner(build_app(self.state), access_log=None)  # an access log would keep the tokens
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port, reuse_address=True)
        try:
            await site.start()
        except OSError:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]
        token = await asyncio.to_thread(self.state.tokens.issue)
        if self.config.reachable_from_elsewhere:
            log.warning("The memory dashboard on %s:%d is reachable from other machines (MEMORY_DASHBOARD_PUBLIC=1): "
                        "put TLS in front of it (a reverse proxy serving https://, named in MEMORY_DASHBOARD_URL)",
                        self.config.host, self.port)
        # The link's token is the one secret the log may hold; a user:password@ in MEMORY_DASHBOARD_URL is not.
        base = self.config.base_url(self.port)
        link = self.config.login_link(token, self.port).replace(base, redacted(base) or base, 1)
        log.info("Memory dashboard on %s:%d; sign in within %.0f minutes (once): %s", self.config.host, self.port,
                 self.config.login_ttl_s / 60, link)
        self.first_link = link
        self._sampler = asyncio.create_task(self._sample(), name="memory-dashboard-sampler")
        return self.config.base_url(self.port)

    async def stop(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            await asyncio.gather(self._sampler, return_exceptions=True)
            self._sampler = None
            await self.keep_history()  # the last minutes, before memory closes
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            log.info("Memory dashboard stopped")

    async def sample_once(self, previous: int | None, refresh_overviews: bool) -> int | None:
        """Record the ingest since ``previous`` (the stored total then); returns the total now."""
        stored, backlog = await self.state.source.ingest_totals()
        self.recorder.record_ingest(0 if previous is None else stored - previous, backlog)
        if refresh_overviews:
            self.state.overviews = await self.state.source.guild_overviews()
        return stored

    async def keep_history(self) -> None:
        """Read the Performance history back once memory is open, then write what was recorded since."""
        try:
            await self.history.sync()
        except SourceUnavailable:
            pass  # memory is still opening (or closed): later, or never for what this process recorded
        except Exception:
            log.warning("Dashboard: keeping the Performance history in the database failed; it is kept in memory "
                        "and written again in a minute", exc_info=True)

    async def _sample(self) -> None:
        previous, tick = None, 0
        while True:
            try:
                previous = await self.sample_once(previous, tick % OVERVIEW_EVERY == 0)
            except SourceUnavailable:
                pass  # memory is still opening: nothing to sample yet
            except Exception:
                log.exception("Dashboard: sampling the ingest figures failed; trying again in %.0f s",
                              SAMPLE_INTERVAL_S)
            if tick % OVERVIEW_EVERY == 0:
                await self.keep_history()
            tick += 1
            await asyncio.sleep(SAMPLE_INTERVAL_S)
