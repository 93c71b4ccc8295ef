"""The dashboard in a real browser: Debian's headless Chromium driven by Selenium through chromium-driver, on a
real Memory. Sign in with the link, read the plots, search, forget a message and see it gone.

Set DASHBOARD_SCREENSHOTS=1 to write the pages' screenshots to docs/img/ (otherwise they go to a temp folder).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from cogs.memory.dashboard.server import Dashboard
from tests.fixtures.dashboard import CHANNEL, GUILD, HOSTILE, NONCE, NONCE_ID, files_holding

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parents[4]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytestmark = pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                                reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
                                       "chromium-driver): .ci/run installs them")


class Browser:
    """A headless Chromium; every blocking WebDriver call runs off the event loop that serves the dashboard."""

    def __init__(self, driver: Any, base: str) -> None:
        self.driver, self.base = driver, base

    async def call(self, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(function, *args)

    async def open(self, path: str) -> None:
        await self.call(self.driver.get, self.base + path)
        await self.no_dialog()

    async def no_dialog(self) -> None:
        from selenium.common.exceptions import NoAlertPresentException

        def check() -> None:
            try:
                text = self.driver.switch_to.alert.text
            except NoAlertPresentException:
                return
            raise AssertionError(f"a dialog opened: {text!r}")

        await self.call(check)

    async def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return await self.call(self.driver.find_element, By.CSS_SELECTOR, css)

    async def find_all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return await self.call(self.driver.find_elements, By.CSS_SELECTOR, css)

    async def text(self, css: str) -> str:
        return await self.call(lambda: self.driver.find_element("css selector", css).text)

    async def submit(self, form_css: str, fields: dict[str, str]) -> None:
        def fill() -> None:
            from selenium.webdriver.support import expected_conditions
            from selenium.webdriver.support.ui import Select, WebDriverWait

            from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

            def filled() -> Any:
                form = self.driver.find_element("css selector", form_css)
                for name, value in fields.items():
                    element = form.find_element("name", name)
                    if element.tag_name == "select":
                        Select(element).select_by_value(value)
                    else:
                        element.clear()
                        element.send_keys(value)
                return form

            # On a loaded box Chromium may hand back a node of the document it is still replacing ("does not belong
            # to the document"): the form is found and filled again, before anything is submitted.
            for attempt in range(3):
                try:
                    form = filled()
                    break
                except (StaleElementReferenceException, WebDriverException) as error:
                    if attempt == 2 or "document" not in str(error) and not isinstance(
                            error, StaleElementReferenceException):
                        raise
            form.find_element("css selector", "button[type=submit]").click()
            # A click does not wait for the next page: the old form going stale says it was replaced.
            WebDriverWait(self.driver, 60).until(expected_conditions.staleness_of(form))
            WebDriverWait(self.driver, 60).until(
                expected_conditions.presence_of_element_located(("css selector", "main h1")))

        await self.call(fill)
        await self.no_dialog()

    async def screenshot(self, folder: Path, name: str) -> None:
        path = folder / f"dashboard-{name}.png"
        await self.call(self.driver.save_screenshot, str(path))
        assert path.read_bytes()[:8] == PNG_MAGIC


def chromium() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="dashboard-chromium-")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    driver.profile_dir = profile
    return driver


@pytest.fixture
async def browser(real_dashboard: Dashboard) -> AsyncIterator[Browser]:
    driver = await asyncio.to_thread(chromium)
    try:
        yield Browser(driver, f"http://127.0.0.1:{real_dashboard.port}")
    finally:
        await asyncio.to_thread(driver.quit)
        shutil.rmtree(driver.profile_dir, ignore_errors=True)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    if os.environ.get("DASHBOARD_SCREENSHOTS") == "1":
        folder = ROOT / "docs" / "img"
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    return tmp_path


async def test_an_admin_signs_in_reads_the_plots_searches_and_forgets(
        browser: Browser, real_dashboard: Dashboard, tmp_path: Path, shots: Path) -> None:
    token = await asyncio.to_thread(real_dashboard.state.tokens.issue)
    await browser.open(f"/login?token={token}")
    assert await browser.call(lambda: browser.driver.current_url) == browser.base + "/"  # the token left the bar
    assert "Real guild" in await browser.text("#guilds") and "41" in await browser.text("#guilds")
    await browser.screenshot(shots, "overview")

    await browser.open("/search")
    await browser.submit("form.filters", {"q": "lake cabin booked", "guild": str(GUILD), "limit": "8"})
    rows = await browser.find_all("#hits tr.hit")
    assert len(rows) == 8
    first = [cell.text for cell in await browser.call(rows[0].find_elements, "css selector", "td")]
    assert first[0] == "1" and first[2] != "-"  # reranked: rank after, and a rerank score
    # The tiny reranker's weights are random: its order is not the test's to predict, the first stage's hits are.
    assert "lake cabin" in await browser.text("#hits")
    # Each hit explains its first-stage score: the sides' standardised scores times their weights, and any loans.
    assert first[5].startswith("keyword ") and "\nvector " in first[5]
    assert "×" in await browser.text("#hits")
    await browser.screenshot(shots, "search")

    await real_dashboard.sample_once(None, refresh_overviews=True)
    await real_dashboard.sample_once(41, refresh_overviews=False)
    await browser.open("/performance")
    charts = await browser.find_all("svg.chart")
    widths = [(await browser.call(lambda chart=chart: chart.size))["width"] for chart in charts]
    assert len(charts) == 7 and min(widths) > 200  # laid out, at a readable size
    drawn = await browser.find_all("svg.chart .point, svg.chart .series")
    assert len(drawn) >= 7  # every chart shows the recall and ingest just recorded
    await browser.screenshot(shots, "performance")

    await browser.open(f"/browse?guild={GUILD}&channel={CHANNEL}")
    shown = await browser.text("#messages")
    for hostile in HOSTILE:
        assert hostile in shown  # shown as the text it is: nothing ran, nothing was parsed as markup
    assert not await browser.find_all("#messages img, #messages script, #messages b")
    await browser.screenshot(shots, "browse")

    await browser.open(f"/controls?guild={GUILD}")
    await browser.screenshot(shots, "controls")
    await browser.submit("#forget", {"kind": "message", "guild": str(GUILD), "target": str(NONCE_ID)})
    assert f"Forget message {NONCE_ID} in guild {GUILD}?" in await browser.text("#confirm-question")
    await browser.submit("#confirm", {})
    assert await browser.text("#message") == (f"Forgot 1 message (message {NONCE_ID}) in guild {GUILD}; erased from "
                                              "the files too.")

    await browser.open(f"/search?q={NONCE}&guild={GUILD}&limit=50")
    ids = [await browser.call(row.get_attribute, "id") for row in await browser.find_all("#hits tr.hit")]
    assert f"hit-{NONCE_ID}" not in ids
    data_dir = real_dashboard.config.data_dir
    assert await asyncio.to_thread(files_holding, data_dir, NONCE.encode()) == []
