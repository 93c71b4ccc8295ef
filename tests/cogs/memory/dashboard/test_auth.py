"""Sign-in tokens shared through a file between the CLI and the running dashboard."""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import sys
from pathlib import Path

from cogs.memory.dashboard.server import Dashboard
from cogs.memory.dashboard.auth import MAX_PENDING_TOKENS, LoginTokens
from tests.fixtures.dashboard import SignedIn

ROOT = Path(__file__).resolve().parents[4]


def test_the_token_file_holds_only_hashes_and_only_its_owner_reads_it(tmp_path: Path) -> None:
    tokens = LoginTokens(tmp_path / "dashboard", ttl_s=600)
    token = tokens.issue()
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(tokens.path.parent.stat().st_mode) == 0o700
    assert token not in tokens.path.read_text()


def test_a_token_file_left_readable_is_closed_again(tmp_path: Path) -> None:
    tokens = LoginTokens(tmp_path, ttl_s=600)
    tokens.path.write_text("")
    os.chmod(tokens.path, 0o644)
    tokens.issue()
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600


def test_tokens_are_single_use_and_independent(tmp_path: Path) -> None:
    tokens = LoginTokens(tmp_path, ttl_s=600)
    first, second = tokens.issue(), tokens.issue()
    assert tokens.consume(second) and not tokens.consume(second)
    assert tokens.consume(first)


def test_a_flood_of_tokens_keeps_only_the_newest(tmp_path: Path) -> None:
    tokens = LoginTokens(tmp_path, ttl_s=600)
    issued = [tokens.issue() for _ in range(MAX_PENDING_TOKENS + 5)]
    assert len(tokens.path.read_text().splitlines()) == MAX_PENDING_TOKENS
    assert not tokens.consume(issued[0]) and tokens.consume(issued[-1])


def run_cli(tmp_path: Path, port: str | None) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("MEMORY_DASHBOARD_")}
    if port is not None:
        env["MEMORY_DASHBOARD_PORT"] = port
    return subprocess.run([sys.executable, "-m", "cogs.memory", "--db", str(tmp_path / "memory.sqlite3"),
                           "dashboard-link"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


async def test_a_link_from_the_cli_signs_in_to_the_running_dashboard(dashboard: Dashboard, anonymous: SignedIn,
                                                                     tmp_path: Path) -> None:
    done = await asyncio.to_thread(run_cli, tmp_path, str(dashboard.port))
    assert done.returncode == 0, done.stderr
    link = done.stdout.strip()
    assert link.startswith(f"http://127.0.0.1:{dashboard.port}/login?token=")
    async with anonymous.http.get(link, allow_redirects=False) as response:
        assert response.status == 303
    async with anonymous.http.get(anonymous.url("/api/overview")) as response:
        assert response.status == 200


def test_the_cli_says_how_to_turn_the_dashboard_on(tmp_path: Path) -> None:
    done = run_cli(tmp_path, None)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == ("error: the dashboard is off: set MEMORY_DASHBOARD_PORT (in .env or the "
                                   "environment) and restart the bot, or run `discord-memory dashboard` and give its "
                                   "--port here")


def test_the_cli_prints_no_link_to_a_port_where_nothing_listens(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago, and nothing listens on it now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = run_cli(tmp_path, str(port))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (f"error: nothing is listening on 127.0.0.1:{port}: start the bot (with "
                                   f"MEMORY_DASHBOARD_PORT set) or `discord-memory dashboard --port {port}`, then ask "
                                   "again")
    assert not (tmp_path / "dashboard" / "login-tokens").exists()  # no token issued for a dead link


async def test_the_link_in_the_log_at_start_signs_in_once(fake_source, tmp_path: Path, anonymous: SignedIn,
                                                          caplog) -> None:
    import logging
    import re

    from cogs.memory.dashboard.config import DashboardConfig

    with caplog.at_level(logging.INFO, logger="cogs.memory.dashboard"):
        server = Dashboard(fake_source, DashboardConfig(port=0, data_dir=tmp_path / "own"))
        await server.start()
    try:
        [link] = re.findall(r"http://127\.0\.0\.1:\d+/login\?token=[\w-]+", caplog.text)
        assert link.startswith(f"http://127.0.0.1:{server.port}/")
        async with anonymous.http.get(link, allow_redirects=False) as response:
            assert response.status == 303
        async with anonymous.http.get(link, allow_redirects=False) as response:
            assert response.status == 401
        token = link.split("token=")[1]
        assert caplog.text.count(token) == 1  # the refusal and the sign-in are logged without it
    finally:
        await server.stop()
