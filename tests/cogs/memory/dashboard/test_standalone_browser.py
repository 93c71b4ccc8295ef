"""``discord-memory dashboard`` as an admin runs it, with no bot and no Discord: an export imported by the real CLI,
the dashboard served by the real CLI in a process of its own, driven in headless Chromium. The 401 page is styled;
the link signs in; the page says no Discord is behind it; the Performance page is empty, then plots a search; a
search by ``@name`` shows a hostile message as text; forgetting it asks first, says what goes, and leaves it gone and
in the erasure ledger; a second link comes from ``dashboard-link``; signing out leaves no navigation; SIGTERM stops
it, and its Performance minutes stay in the database."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.cogs.memory.dashboard.test_browser import CHROMEDRIVER, CHROMIUM, Browser, chromium

ROOT = Path(__file__).resolve().parents[4]
PROFILE = 'description = "cpu-small, reranking off"\ndevice = "cpu"\ndtype = "float32"\n\n[reranker]\nenabled = false\n'
SCRIPT = "<script>alert(1)</script> see the alert"
TEXTS = [(1000, 5, "alice", "the lake cabin is booked for july"), (1001, 5, "alice", SCRIPT),
         (1002, 6, "bob", "the printer is broken again, alert the office"), (1003, 6, "bob", "snacks on saturday")]
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMORY_DASHBOARD_")},
       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

pytestmark = pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                                reason="needs Debian's chromium and chromium-driver: .ci/run installs them")


def cli(*args: str, data: Path) -> list[str]:
    return [sys.executable, "-m", "cogs.memory", "--profile", str(data.parent / "profile.toml"), *args]


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    """data/ filled by ``discord-memory import`` from a DiscordChatExporter JSON export."""
    data = tmp_path / "data"
    (tmp_path / "profile.toml").write_text(PROFILE, encoding="utf-8")
    messages = [{"id": str(message_id), "type": "Default", "timestamp": f"2024-05-01T10:0{n}:00+00:00",
                 "timestampEdited": None, "content": text, "attachments": [], "embeds": [],
                 "author": {"id": str(author), "name": name, "nickname": None, "isBot": False}}
                for n, (message_id, author, name, text) in enumerate(TEXTS)]
    export = {"guild": {"id": "1", "name": "Picnic Club"}, "messages": messages,
              "channel": {"id": "20", "type": "GuildTextChat", "categoryId": None, "name": "general"}}
    (tmp_path / "export.json").write_text(json.dumps(export), encoding="utf-8")
    done = subprocess.run(cli("--db", str(data / "memory.sqlite3"), "--index-dir", str(data / "indexes"), "import",
                              str(tmp_path / "export.json"), data=data),
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "4 stored" in done.stdout, done.stderr
    return data


@pytest.fixture
def served(imported: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(cli("dashboard", "--data", str(imported), "--port", "0", data=imported), cwd=ROOT,
                               env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        link = process.stdout.readline().strip()  # the first line, once it listens (EOF if it failed)
        assert link.startswith("http://127.0.0.1:"), process.communicate(timeout=60)
        yield process, link
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture
async def browser(served: tuple[subprocess.Popen[str], str]) -> AsyncIterator[Browser]:
    driver = await asyncio.to_thread(chromium)
    try:
        yield Browser(driver, served[1].split("/login")[0])
    finally:
        await asyncio.to_thread(driver.quit)
        shutil.rmtree(driver.profile_dir, ignore_errors=True)


def rows(data: Path, sql: str) -> list[tuple]:
    connection = sqlite3.connect(f"file:{data / 'memory.sqlite3'}?mode=ro", uri=True)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


async def test_the_standalone_dashboard_signs_in_searches_and_forgets_without_discord(
        browser: Browser, served: tuple[subprocess.Popen[str], str], imported: Path) -> None:
    process, link = served
    await browser.open("/")  # no session yet: the 401 page, with the stylesheet
    assert await browser.text("main h1") == "Error 401" and "dashboard-link" in await browser.text("#message")
    header = await browser.find("header")
    assert await browser.call(header.value_of_css_property, "background-color") == "rgba(35, 57, 93, 1)"

    await browser.open(link.removeprefix(browser.base))
    assert "no Discord behind it" in await browser.text("#notice") and "Picnic Club" in await browser.text("main")
    await browser.open("/performance")
    assert "No recalls in this window yet" in await browser.text("#performance-empty")

    await browser.open("/search")
    await browser.submit("form.filters", {"q": "alert", "guild": "1", "author": "@ALICE"})
    hits = await browser.text("#hits")
    assert SCRIPT in hits and "alice 5" in hits and "#general" in hits and "bob" not in hits
    assert not await browser.find_all("#hits script")
    await browser.open("/performance")
    assert not await browser.find_all("#performance-empty") and await browser.find_all("svg.chart .point")

    await browser.open("/controls")
    await browser.submit("#forget", {"kind": "message", "guild": "1", "target": "1001"})
    assert "Forget message 1001 in guild 1?" in await browser.text("#confirm-question")
    assert (await browser.text("#preview-count"), await browser.text("#preview-author"),
            await browser.text("#preview-channel"), await browser.text("#preview-text")) == ("1", "alice 5",
                                                                                              "#general 20", SCRIPT)
    await browser.submit("#confirm", {})
    assert await browser.text("#message") == "Forgot 1 message (message 1001) in guild 1; erased from the files too."
    await browser.open("/search?q=alert&guild=1")
    assert "hit-1001" not in [await browser.call(row.get_attribute, "id") for row in await browser.find_all("tr.hit")]

    again = await asyncio.to_thread(subprocess.run, cli("dashboard-link", "--data", str(imported), "--port",
                                                        link.split(":")[2].split("/")[0], data=imported),
                                    cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.startswith(browser.base + "/login?token="), again.stderr
    await browser.submit("form.logout", {})
    assert "Signed out." in await browser.text("#message") and not await browser.find_all("nav")

    process.send_signal(signal.SIGTERM)
    out, err = await asyncio.to_thread(process.communicate, timeout=120)
    assert process.returncode == 0 and "Dashboard stopped." in err and "Traceback" not in err, err
    assert rows(imported, "SELECT COUNT(*) FROM messages WHERE message_id = 1001") == [(0,)]
    [(entry,)] = rows(imported, "SELECT entry FROM erasures")
    assert '"messages":[1001]' in entry and "script" not in entry
    minutes = rows(imported, "SELECT origin, figures FROM performance_minutes")  # a minute or two
    assert {origin for origin, _ in minutes} == {"standalone"}
    assert sum(json.loads(figures)["recalls"] for _, figures in minutes) == 2  # the two searches
