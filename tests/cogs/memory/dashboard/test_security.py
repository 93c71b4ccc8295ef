"""The dashboard as an attacker sees it: no route without a session, CSRF, login tokens, escaping, static files,
binding, paging limits and security headers."""

from __future__ import annotations

import asyncio
import logging
import re
import socket

import aiohttp
import pytest
import yarl
from aiohttp import web

from cogs.memory.dashboard.config import DashboardConfig
from cogs.memory.dashboard.server import Dashboard
from cogs.memory.dashboard.state import STATE
from cogs.memory.dashboard.source import SettingsView
from cogs.memory.runtime.config import load_settings
from tests.fixtures.dashboard import CHANNEL, GUILD, FakeSource, SignedIn, csrf_from, fake_messages

# Routes that carry their own credentials instead of the session: the sign-in link and the Prometheus scraper.
OWN_CREDENTIALS = {"/login", "/metrics"}
# Static files: only the stylesheet is served without a session (the error pages link it); it holds no data.
STATIC = "/static/{name}"


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", str(GUILD), path)


def app_routes(dashboard: Dashboard) -> list[tuple[str, str]]:
    app: web.Application = dashboard._runner.app  # the app actually served
    routes = {(route.method, route.resource.canonical) for route in app.router.routes() if route.method != "HEAD"}
    return sorted(routes)


async def test_every_route_refuses_a_client_without_a_session(dashboard: Dashboard, anonymous: SignedIn) -> None:
    routes = app_routes(dashboard)
    assert len(routes) > 20  # pages, API, static, logout: the check below ran over all of them
    for method, path in routes:
        if path in OWN_CREDENTIALS:
            continue
        name = "chart.svg" if path == STATIC else ""  # any static file but the stylesheet needs the session
        async with anonymous.http.request(method, anonymous.url(concrete(path).replace("{name}", name)),
                                          allow_redirects=False) as response:
            assert response.status == 401, (method, path, response.status)
            body = await response.text()
            assert "dashboard-link" in body, (method, path)


async def test_the_stylesheet_alone_is_served_without_a_session(dashboard: Dashboard, anonymous: SignedIn) -> None:
    async with anonymous.http.get(anonymous.url("/")) as page:  # the 401 page links it, so it is styled
        assert page.status == 401 and 'href="/static/dashboard.css"' in await page.text()
        assert 'action="/logout"' not in await page.text()
    async with anonymous.http.get(anonymous.url("/static/dashboard.css")) as response:
        assert response.status == 200 and response.content_type == "text/css"
        assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
    async with anonymous.http.post(anonymous.url("/static/dashboard.css")) as response:
        assert response.status == 401


async def test_signing_out_shows_a_styled_page_without_the_navigation(client: SignedIn) -> None:
    async with client.http.post(client.url("/logout"), data={"csrf_token": client.csrf}) as response:
        body = await response.text()
        assert response.status == 200 and "Signed out." in body and 'href="/static/dashboard.css"' in body
        assert "<nav>" not in body and 'action="/logout"' not in body and "dashboard-link" in body


async def test_the_routes_with_their_own_credentials_refuse_without_them(dashboard: Dashboard,
                                                                         anonymous: SignedIn) -> None:
    async with anonymous.http.get(anonymous.url("/login"), allow_redirects=False) as response:
        assert response.status == 401
    dashboard.state.config = DashboardConfig(port=0, data_dir=dashboard.config.data_dir, metrics_token="s3cret")
    async with anonymous.http.get(anonymous.url("/metrics")) as response:
        assert response.status == 401
    async with anonymous.http.get(anonymous.url("/metrics"), headers={"Authorization": "Bearer s3cret"}) as response:
        assert response.status == 200
        assert "memory_guild_messages" in await response.text()


async def test_metrics_without_a_token_answer_loopback_only(dashboard: Dashboard, anonymous: SignedIn) -> None:
    from cogs.memory.dashboard.server import _is_loopback

    async with anonymous.http.get(anonymous.url("/metrics")) as response:
        assert response.status == 200  # 127.0.0.1
    assert not _is_loopback("192.0.2.7") and not _is_loopback(None) and _is_loopback("::1")


async def test_a_login_token_works_once(dashboard: Dashboard, anonymous: SignedIn) -> None:
    token = await asyncio.to_thread(dashboard.state.tokens.issue)
    async with anonymous.http.get(anonymous.url("/login"), params={"token": token}, allow_redirects=False) as first:
        assert first.status == 303
        cookie = first.cookies["memory_dashboard_session"]
        assert cookie["httponly"] and cookie["samesite"] == "Strict" and int(cookie["max-age"]) > 0
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as other:
        async with other.get(anonymous.url("/login"), params={"token": token}, allow_redirects=False) as again:
            assert again.status == 401


async def test_an_expired_login_token_is_refused(dashboard: Dashboard, anonymous: SignedIn) -> None:
    clock = [1_000_000.0]
    tokens = dashboard.state.tokens
    tokens._clock = lambda: clock[0]
    token = await asyncio.to_thread(tokens.issue)
    clock[0] += tokens.ttl_s + 1
    async with anonymous.http.get(anonymous.url("/login"), params={"token": token}, allow_redirects=False) as response:
        assert response.status == 401


@pytest.mark.parametrize("guess", ["", "x", "A" * 43, "../../etc/passwd", "A" * 5000])
async def test_a_guessed_login_token_is_refused(dashboard: Dashboard, anonymous: SignedIn, guess: str) -> None:
    await asyncio.to_thread(dashboard.state.tokens.issue)  # a real one exists meanwhile
    async with anonymous.http.get(anonymous.url("/login"), params={"token": guess}, allow_redirects=False) as response:
        assert response.status == 401
    async with anonymous.http.get(anonymous.url("/api/overview")) as response:
        assert response.status == 401


async def test_a_cross_site_post_without_the_csrf_token_is_refused(client: SignedIn, fake_source: FakeSource) -> None:
    form = {"kind": "guild", "guild": str(GUILD)}
    async with client.http.post(client.url("/controls/forget"), data=form) as response:
        assert response.status == 403
    async with client.http.post(client.url("/controls/forget"), data={**form, "csrf_token": "forged"}) as response:
        assert response.status == 403
    async with client.http.post(client.url("/api/forget"), json={"kind": "guild", "guild_id": GUILD}) as response:
        assert response.status == 403
    async with client.http.post(client.url("/controls/forget"), data={**form, "csrf_token": client.csrf},
                                headers={"Sec-Fetch-Site": "cross-site"}) as response:
        assert response.status == 403
    assert not any(call.startswith("forget") for call in fake_source.calls)
    assert len(fake_source.messages) == 6


async def test_a_csrf_token_from_another_session_is_refused(client: SignedIn, dashboard: Dashboard) -> None:
    _, other = dashboard.state.sessions.open()
    async with client.http.post(client.url("/api/forget"), json={"kind": "guild", "guild_id": GUILD},
                                headers={"X-CSRF-Token": other.csrf}) as response:
        assert response.status == 403


async def test_hostile_messages_render_as_inert_text(client: SignedIn) -> None:
    pages = [f"/browse?guild={GUILD}&channel={CHANNEL}", f"/search?q=alert+bold+everyone&guild={GUILD}&limit=50"]
    for path in pages:
        async with client.http.get(client.url(path)) as response:
            html = await response.text()
        assert "<script>alert(1)</script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<img" not in html and "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
        assert "&lt;@123&gt;" in html and "**bold**" in html and 'href="javascript' not in html
    async with client.http.get(client.url("/")) as response:
        assert "Test &lt;b&gt;guild&lt;/b&gt;" in await response.text()


async def test_a_hostile_channel_name_renders_as_inert_text(client: SignedIn, fake_source: FakeSource) -> None:
    fake_source.settings_by_guild[GUILD] = SettingsView(True, frozenset({CHANNEL}), frozenset({CHANNEL}), None, False, False)
    pages = [f"/browse?guild={GUILD}&channel={CHANNEL}", f"/search?q=alert&guild={GUILD}", f"/controls?guild={GUILD}"]
    for path in pages:
        async with client.http.get(client.url(path)) as response:
            html = await response.text()
        assert "<script>alert(" not in html, path
        assert "#&lt;script&gt;alert(&#39;channel&#39;)&lt;/script&gt;" in html, path


@pytest.mark.parametrize("path", ["/static/../../etc/passwd", "/static/..%2F..%2Fetc%2Fpasswd",
                                  "/static/%2e%2e/%2e%2e/etc/passwd", "/static/..%252F..%252Fetc%252Fpasswd",
                                  "/static/%2e%2e%5c%2e%2e%5cetc%5cpasswd", "/static/dashboard.css%00.png",
                                  "/static/", "/static/server.py", "/static/../server.py"])
async def test_static_files_cannot_be_climbed_out_of(client: SignedIn, path: str) -> None:
    raw = yarl.URL(client.url(path), encoded=True)  # sent as written: the client must not tidy the dots away
    assert raw.raw_path == path
    async with client.http.get(raw, allow_redirects=False) as response:
        body = await response.read()
    assert response.status in (400, 403, 404), response.status
    assert b"root:" not in body and b"import" not in body


async def test_a_served_static_file_is_the_stylesheet(client: SignedIn) -> None:
    async with client.http.get(client.url("/static/dashboard.css")) as response:
        assert response.status == 200 and response.content_type == "text/css"


async def test_every_answer_carries_the_security_headers(client: SignedIn, anonymous: SignedIn) -> None:
    for path in ("/", "/api/overview", "/static/dashboard.css", "/no/such/page", "/login?token=x"):
        async with client.http.get(client.url(path), allow_redirects=False) as response:
            headers = response.headers
        csp = headers["Content-Security-Policy"]
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
        assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
        assert headers["X-Content-Type-Options"] == "nosniff"


async def test_a_foreign_host_name_is_refused(client: SignedIn) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own name."""
    async with client.http.get(client.url("/api/overview"), headers={"Host": "evil.example:80"}) as response:
        assert response.status == 421


def listening(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        return probe.connect_ex((host, port)) == 0


def other_local_address() -> str | None:
    """An address of this machine other than loopback, to show the server is not reachable there."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") else address


async def test_the_server_binds_only_where_configured(dashboard: Dashboard) -> None:
    sockets = dashboard._runner.addresses
    assert [address[0] for address in sockets] == ["127.0.0.1"]
    assert await asyncio.to_thread(listening, "127.0.0.1", dashboard.port)
    address = other_local_address()
    if address is None:
        pytest.skip("this machine has no address besides loopback to probe")
    assert not await asyncio.to_thread(listening, address, dashboard.port)


async def test_the_dashboard_is_off_unless_a_port_is_configured(tmp_path) -> None:
    assert DashboardConfig.from_settings(tmp_path, load_settings({}, None)) is None
    config = DashboardConfig.from_settings(tmp_path, load_settings({"MEMORY_DASHBOARD_PORT": "8765"}, None))
    assert config is not None and config.host == "127.0.0.1" and config.port == 8765


async def test_pages_are_capped_however_much_is_asked(anonymous: SignedIn, tmp_path) -> None:
    source = FakeSource(fake_messages(500))
    server = Dashboard(source, DashboardConfig(port=0, data_dir=tmp_path / "big"))
    await server.start()
    try:
        client = SignedIn(server, anonymous.http)
        await client.login()
        async with client.http.get(client.url(f"/api/browse?guild={GUILD}&channel={CHANNEL}")) as response:
            page = await response.json()
        assert len(page["messages"]) == 50 and page["next_before"] is not None
        async with client.http.get(client.url(f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit=100")) as response:
            assert len((await response.json())["messages"]) == 100
        for limit in ("101", "100000", "0", "-1"):
            async with client.http.get(client.url(f"/api/browse?guild={GUILD}&channel={CHANNEL}&limit={limit}")) as r:
                assert r.status == 400
        async with client.http.get(client.url(f"/api/search?q=the&guild={GUILD}&limit=51")) as response:
            assert response.status == 400
        async with client.http.get(client.url(f"/browse?guild={GUILD}&channel={CHANNEL}")) as response:
            assert (await response.text()).count('class="stored"') == 50
    finally:
        await server.stop()


async def test_a_request_body_over_the_cap_is_refused(client: SignedIn) -> None:
    async with client.http.post(client.url("/api/settings"), json={"guild_id": GUILD, "pad": "x" * 100_000},
                                headers={"X-CSRF-Token": client.csrf}) as response:
        assert response.status == 413


async def test_signing_out_ends_the_session(client: SignedIn) -> None:
    async with client.http.get(client.url("/")) as response:
        csrf = csrf_from(await response.text())
    async with client.http.post(client.url("/logout"), data={"csrf_token": csrf}) as response:
        assert response.status == 200
    async with client.http.get(client.url("/api/overview")) as response:
        assert response.status == 401


def test_the_app_state_is_the_dashboards(dashboard: Dashboard) -> None:
    assert dashboard._runner.app[STATE] is dashboard.state


async def test_a_session_expires(client: SignedIn, dashboard: Dashboard) -> None:
    sessions = dashboard.state.sessions
    clock = [sessions._clock()]
    sessions._clock = lambda: clock[0]
    async with client.http.get(client.url("/api/overview")) as response:
        assert response.status == 200
    clock[0] += sessions.ttl_s + 1
    async with client.http.get(client.url("/api/overview")) as response:
        assert response.status == 401


async def test_behind_a_tls_proxy_the_cookie_is_secure_and_its_host_accepted(fake_source: FakeSource, tmp_path,
                                                                             anonymous: SignedIn) -> None:
    config = DashboardConfig(port=0, data_dir=tmp_path / "tls", public_url="https://memory.example.org")
    server = Dashboard(fake_source, config)
    await server.start()
    try:
        token = await asyncio.to_thread(server.state.tokens.issue)
        assert config.login_link(token) == f"https://memory.example.org/login?token={token}"
        url = f"http://127.0.0.1:{server.port}/login"
        async with anonymous.http.get(url, params={"token": token}, allow_redirects=False,
                                      headers={"Host": "memory.example.org"}) as response:
            assert response.status == 303
            assert response.cookies["memory_dashboard_session"]["secure"]
    finally:
        await server.stop()


# -- scrapes and binds ---------------------------------------------------------------------------------------------

SCRAPER_TOKEN = "s3cret-scraper-token"


@pytest.fixture
def scraped(dashboard: Dashboard) -> Dashboard:
    """The dashboard with a scraper's token configured."""
    dashboard.state.config = DashboardConfig(port=0, data_dir=dashboard.config.data_dir, metrics_token=SCRAPER_TOKEN)
    return dashboard


@pytest.mark.parametrize("host", ["192.0.2.7:8765", "memory-bot.internal", "[2001:db8::7]:8765"])
async def test_a_scrape_with_the_token_is_served_whatever_the_host_name(scraped: Dashboard, anonymous: SignedIn,
                                                                        host: str) -> None:
    """A scraper asks for the bound address by whatever name it knows; a rebinding browser never has the token."""
    async with anonymous.http.get(anonymous.url("/metrics"), headers={
            "Host": host, "Authorization": f"Bearer {SCRAPER_TOKEN}"}) as response:
        assert response.status == 200
        assert "memory_guild_messages" in await response.text()


async def test_without_the_token_a_foreign_host_name_is_still_refused(scraped: Dashboard, client: SignedIn) -> None:
    for headers in ({"Host": "evil.example"}, {"Host": "evil.example", "Authorization": "Bearer wrong"}):
        async with client.http.get(client.url("/metrics"), headers=headers) as response:
            assert response.status == 421
    # The token opens /metrics alone: a page under a foreign name stays refused, session cookie and all.
    async with client.http.get(client.url("/api/overview"), headers={
            "Host": "evil.example", "Authorization": f"Bearer {SCRAPER_TOKEN}"}) as response:
        assert response.status == 421
    async with client.http.get(client.url("/metrics"), headers={"Authorization": "Bearer wrong"}) as response:
        assert response.status == 401


def test_a_public_bind_needs_the_setting_that_says_so(tmp_path) -> None:
    from cogs.memory.runtime.config import SettingsError

    for host in ("0.0.0.0", "192.0.2.7", "::", "dashboard.lan"):
        with pytest.raises(SettingsError) as refused:
            load_settings({"MEMORY_DASHBOARD_PORT": "8765", "MEMORY_DASHBOARD_HOST": host}, None)
        assert refused.value.lines == [
            "MEMORY_DASHBOARD_HOST lets other machines reach the dashboard: set MEMORY_DASHBOARD_PUBLIC=1 to mean it "
            f"(and put TLS in front), or use 127.0.0.1, not {host!r}"]
        with pytest.raises(ValueError, match="MEMORY_DASHBOARD_PUBLIC=1"):
            DashboardConfig(port=8765, data_dir=tmp_path, host=host)
    public = load_settings({"MEMORY_DASHBOARD_PORT": "8765", "MEMORY_DASHBOARD_HOST": "0.0.0.0",
                            "MEMORY_DASHBOARD_PUBLIC": "1"}, None)
    config = DashboardConfig.from_settings(tmp_path, public)
    assert config is not None and (config.host, config.public, config.reachable_from_elsewhere) == ("0.0.0.0", True, True)
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        local = load_settings({"MEMORY_DASHBOARD_PORT": "8765", "MEMORY_DASHBOARD_HOST": host}, None)
        assert not DashboardConfig.from_settings(tmp_path, local).reachable_from_elsewhere


def test_the_bot_refuses_a_public_bind_without_the_setting_in_one_error_line(monkeypatch, tmp_path, capsys) -> None:
    import launcher

    monkeypatch.setenv("DISCORD_TOKEN", "token")
    monkeypatch.setenv("MEMORY_DASHBOARD_PORT", "8765")
    monkeypatch.setenv("MEMORY_DASHBOARD_HOST", "0.0.0.0")
    monkeypatch.setattr(launcher, "ENV_FILE", tmp_path / ".env")
    assert launcher.main([]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: MEMORY_DASHBOARD_HOST lets other machines reach the dashboard: set MEMORY_DASHBOARD_PUBLIC=1 to mean it "
        "(and put TLS in front), or use 127.0.0.1, not '0.0.0.0'"]


async def test_a_public_bind_warns_once_to_put_tls_in_front(fake_source: FakeSource, tmp_path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    server = Dashboard(fake_source, DashboardConfig(port=0, data_dir=tmp_path, host="0.0.0.0", public=True))
    with caplog.at_level(logging.INFO, logger="cogs.memory.dashboard.server"):
        await server.start()
        await server.stop()
    [warning] = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert warning.startswith("The memory dashboard on 0.0.0.0:") and warning.endswith(
        " is reachable from other machines (MEMORY_DASHBOARD_PUBLIC=1): put TLS in front of it (a reverse proxy "
        "serving https://, named in MEMORY_DASHBOARD_URL)")


async def test_a_loopback_bind_warns_of_nothing(fake_source: FakeSource, tmp_path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    server = Dashboard(fake_source, DashboardConfig(port=0, data_dir=tmp_path))
    with caplog.at_level(logging.INFO, logger="cogs.memory.dashboard.server"):
        await server.start()
        await server.stop()
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []


async def test_the_sign_in_link_in_the_log_shows_no_password_of_the_dashboard_url(
        fake_source: FakeSource, tmp_path, caplog: pytest.LogCaptureFixture) -> None:
    config = DashboardConfig(port=0, data_dir=tmp_path, public_url="https://admin:hunter2@memory.example.org")
    server = Dashboard(fake_source, config)
    with caplog.at_level(logging.INFO, logger="cogs.memory.dashboard.server"):
        await server.start()
        await server.stop()
    [line] = [record.getMessage() for record in caplog.records if "sign in within" in record.getMessage()]
    assert "hunter2" not in line and "https://admin:***@memory.example.org/login?token=" in line
