"""What each page and API route shows and does, over a fake source."""

from __future__ import annotations

import logging
import re

import pytest

from cogs.memory.metrics import RecallSample
from cogs.memory.dashboard.source import SettingsChange
from tests.fixtures.dashboard import CHANNEL, GUILD, FakeSource, SignedIn, csrf_from


async def page(client: SignedIn, path: str) -> str:
    async with client.http.get(client.url(path)) as response:
        assert response.status == 200, await response.text()
        return await response.text()


async def test_overview_shows_each_guild_and_the_process(client: SignedIn) -> None:
    html = await page(client, "/")
    assert f"<code>{GUILD}</code>" in html and "all-MiniLM-L6-v2" in html and "cpu-small" in html
    assert "100.0 MB" in html  # RSS


async def test_search_shows_each_hits_explanation(client: SignedIn) -> None:
    html = await page(client, f"/search?q=lake&guild={GUILD}")
    row = re.search(r'<tr class="hit" id="hit-1004">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[:5] == ["1", "1", "1.0000", "0.5000", "keyword"]
    parts = [" ".join(item.split()) for item in re.findall(r"<li[^>]*>(.*?)</li>", cells[5], re.S)]
    assert parts == ["keyword 0.9167 × 0.6000", "vector -", "not found by a side -0.2000",
                     "lent by its previous or next message +0.1000",
                     "boost: author @&lt;b&gt;member1&lt;/b&gt; named in the question +0.0500"]
    assert "the lake cabin is booked" in cells[6]
    assert "first stage 4 ms, rerank 8 ms; 1 of 20 candidates scored" in " ".join(html.split())


async def test_a_hit_the_pool_brought_says_which_hit_brought_it(client: SignedIn) -> None:
    html = await page(client, f"/search?q=printer+lake&guild={GUILD}")
    pooled = re.findall(r'<div class="pooled">(.*?)</div>', html, re.S)
    assert len(pooled) == 1  # only the fake's second hit came in as context
    assert re.sub(r"<[^>]+>", "", pooled[0]).startswith("in the reranker's pool as a Discord reply to message ")
    async with client.http.get(client.url(f"/api/search?q=printer+lake&guild={GUILD}")) as response:
        hits = (await response.json())["hits"]
    assert [hit["pooled_by"] for hit in hits[:2]] == [None, {"lender": hits[0]["message_id"], "kind": "reply"}]


async def test_the_search_api_returns_the_same_explanation(client: SignedIn) -> None:
    async with client.http.get(client.url(f"/api/search?q=printer&guild={GUILD}&limit=5")) as response:
        body = await response.json()
    hit = body["hits"][0]
    assert hit["content"] == "the printer is broken" and hit["rank_before"] == 1 and hit["rank_after"] == 1
    assert hit["parts"] == {"keyword": pytest.approx(0.9167, abs=1e-4), "vector": None, "vector_weight": 0.4,
                            "keyword_weight": 0.6, "missing": -0.2, "neighbour_loan": 0.1, "question_loan": 0.0,
                            "reply_loan": 0.0, "tail": False, "informativeness": 1.0, "said_little": 0.0,
                            "boosts": [{"reason": "author @<b>member1</b> named in the question", "amount": 0.05}]}
    assert hit["created_at"].startswith("2024-05-01T12:05")
    assert body["request"]["limit"] == 5


@pytest.mark.parametrize("query, error", [("q=x&guild=abc", "guild must be a Discord id"),
                                          ("q=x", "guild is required"),
                                          ("q=x&guild=1&after=2024-02-01&before=2024-01-01", "after must be earlier"),
                                          ("q=" + "x" * 301 + "&guild=1", "at most 300 characters")])
async def test_a_bad_search_says_what_to_fix(client: SignedIn, query: str, error: str) -> None:
    async with client.http.get(client.url(f"/api/search?{query}")) as response:
        assert response.status == 400
        assert error in (await response.json())["error"]


async def test_browse_pages_newest_first(client: SignedIn) -> None:
    html = await page(client, f"/browse?guild={GUILD}&channel={CHANNEL}&limit=4")
    assert re.findall(r'id="message-(\d+)"', html) == ["1005", "1004", "1003", "1002"]
    older = re.search(r'id="older" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert re.findall(r'id="message-(\d+)"', await page(client, older)) == ["1001", "1000"]


async def test_forgetting_asks_first_then_says_exactly_what_it_did(client: SignedIn, fake_source: FakeSource,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    csrf = csrf_from(await page(client, "/controls"))
    form = {"kind": "member", "guild": str(GUILD), "target": "101", "csrf_token": csrf}
    async with client.http.post(client.url("/controls/forget"), data=form) as response:
        confirm = await response.text()
    assert "Forget every message of member 101 in guild 456?" in confirm
    assert fake_source.calls == []
    pending = re.search(r'name="pending" value="([^"]+)"', confirm).group(1)
    with caplog.at_level(logging.INFO, logger="cogs.memory.dashboard"):
        async with client.http.post(client.url("/controls/forget/confirm"),
                                    data={"pending": pending, "csrf_token": csrf}) as response:
            done = await response.text()
    assert "Forgot 2 messages of member 101 in guild 456; erased from the files too." in done
    assert [m.author_id for m in fake_source.messages].count(101) == 0
    assert any("Forgot 2 messages of member 101" in r.getMessage() and "session" in r.getMessage()
               for r in caplog.records)
    async with client.http.post(client.url("/controls/forget/confirm"),
                                data={"pending": pending, "csrf_token": csrf}) as response:
        assert response.status == 400  # a confirmation works once
    assert fake_source.calls == ["forget member 456 101"]


async def test_the_api_forgets_in_two_steps(client: SignedIn, fake_source: FakeSource) -> None:
    headers = {"X-CSRF-Token": client.csrf}
    async with client.http.post(client.url("/api/forget"), json={"kind": "message", "guild_id": GUILD,
                                                                 "target_id": 1000}, headers=headers) as response:
        asked = await response.json()
    assert asked["will_forget"] == "message 1000 in guild 456" and fake_source.calls == []
    async with client.http.post(client.url("/api/forget/confirm"), json={"pending_id": asked["pending_id"]},
                                headers=headers) as response:
        done = await response.json()
    assert done["message"] == "Forgot 1 message (message 1000) in guild 456; erased from the files too."
    assert 1000 not in [m.message_id for m in fake_source.messages]


async def test_a_confirmation_belongs_to_the_session_that_asked(client: SignedIn, dashboard) -> None:
    pending_id, _ = dashboard.state.pending.add("someone-else", "guild", GUILD, GUILD)
    async with client.http.post(client.url("/api/forget/confirm"), json={"pending_id": pending_id},
                                headers={"X-CSRF-Token": client.csrf}) as response:
        assert response.status == 400


async def test_settings_are_saved_and_reported(client: SignedIn, fake_source: FakeSource) -> None:
    csrf = csrf_from(await page(client, f"/controls?guild={GUILD}"))
    form = {"guild": str(GUILD), "auto_recall": "on", "retention_days": "30", "forget_on_leave": "off",
            "csrf_token": csrf}
    async with client.http.post(client.url("/controls/settings"), data=form) as response:
        html = await response.text()
    assert ("Saved the settings of guild 456: auto recall on, retention 30 days, forget on leave off, other bots&#39; "
            "messages not stored." in html)
    assert (await fake_source.settings(GUILD)).retention_days == 30


def bot_messages_choice(html: str) -> str:
    """The option the settings form shows as chosen for other bots' messages."""
    select = re.search(r'<select name="store_bot_messages">(.*?)</select>', html, re.S).group(1)
    return re.search(r'<option value="(\w+)" selected>', select).group(1)


async def test_the_settings_form_shows_whether_other_bots_messages_are_stored(client: SignedIn,
                                                                              fake_source: FakeSource) -> None:
    assert bot_messages_choice(await page(client, f"/controls?guild={GUILD}")) == "off"
    await fake_source.change_settings(GUILD, SettingsChange(store_bot_messages=True))
    assert bot_messages_choice(await page(client, f"/controls?guild={GUILD}")) == "on"


async def test_storing_other_bots_messages_is_saved_reported_and_logged(client: SignedIn, fake_source: FakeSource,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    csrf = csrf_from(await page(client, f"/controls?guild={GUILD}"))
    form = {"guild": str(GUILD), "store_bot_messages": "on", "csrf_token": csrf}
    with caplog.at_level(logging.INFO, logger="cogs.memory.dashboard"):
        async with client.http.post(client.url("/controls/settings"), data=form) as response:
            html = await response.text()
    said = f"Saved the settings of guild {GUILD}: auto recall off, retention keep everything, forget on leave off, "
    assert said + "other bots&#39; messages stored." in html  # escaped on the page
    assert (await fake_source.settings(GUILD)).store_bot_messages is True
    assert any(record.getMessage().startswith(f"Dashboard: {said}other bots' messages stored.")
               for record in caplog.records)


async def test_storing_other_bots_messages_needs_the_csrf_token(client: SignedIn, fake_source: FakeSource) -> None:
    form = {"guild": str(GUILD), "store_bot_messages": "on"}
    for token in ({}, {"csrf_token": "forged"}):
        async with client.http.post(client.url("/controls/settings"), data={**form, **token}) as response:
            assert response.status == 403
    assert (await fake_source.settings(GUILD)).store_bot_messages is False


async def test_a_bad_store_bot_messages_value_says_what_it_takes(client: SignedIn, fake_source: FakeSource) -> None:
    async with client.http.post(client.url("/api/settings"), json={"guild_id": GUILD, "store_bot_messages": "<b>"},
                                headers={"X-CSRF-Token": client.csrf}) as response:
        assert response.status == 400
        assert (await response.json())["error"] == "store_bot_messages must be true or false, not '<b>'"
    assert (await fake_source.settings(GUILD)).store_bot_messages is False


async def test_a_profile_switch_says_what_changed(client: SignedIn) -> None:
    async with client.http.post(client.url("/api/profile"), json={"name": "gpu-large"},
                                headers={"X-CSRF-Token": client.csrf}) as response:
        assert (await response.json())["message"] == "Switched the profile from cpu-small to gpu-large."
    async with client.http.get(client.url("/api/profiles")) as response:
        current = [p["name"] for p in (await response.json())["profiles"] if p["current"]]
    assert current == ["gpu-large"]


async def test_the_performance_page_plots_what_was_recorded(client: SignedIn, dashboard) -> None:
    empty = await page(client, "/performance")
    assert empty.count('class="series"') == 0 and 'id="performance-empty"' in empty
    assert "appears with the first search: /memory search, a recall, or Search here" in empty
    assert "appears with the first search the reranker scores" in empty  # (ingest is sampled as it starts)
    for ms in (10.0, 20.0):
        dashboard.recorder.record_recall(RecallSample(first_stage_ms=ms, rerank_ms=3 * ms, offered=20, scored=10,
                                                      cached=5))
    dashboard.recorder.record_ingest(40, 7)
    html = await page(client, "/performance?window=day")
    assert html.count("<svg") == 7 and html.count('class="point"') >= 7  # one bucket: a dot in every chart
    assert "2 recalls in this window" in html and 'id="performance-empty"' not in html


async def test_metrics_are_in_the_prometheus_format(client: SignedIn, dashboard) -> None:
    dashboard.recorder.record_recall(RecallSample(first_stage_ms=30.0, rerank_ms=90.0, offered=20, scored=12,
                                                  cached=4))
    await dashboard.sample_once(None, refresh_overviews=True)
    async with client.http.get(client.url("/metrics")) as response:
        text = await response.text()
    assert response.headers["Content-Type"].startswith("text/plain; version=")
    assert "memory_recall_first_stage_seconds_count 1.0" in text
    assert "memory_rerank_candidates_scored_total 12.0" in text
    assert f'memory_guild_messages{{guild="{GUILD}"}} 6.0' in text
    assert "memory_ingest_backlog 3.0" in text


async def test_actions_are_logged_without_message_content_above_debug(client: SignedIn,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="cogs.memory.dashboard"):
        await page(client, f"/search?q=printer+secretword&guild={GUILD}")
        await page(client, f"/browse?guild={GUILD}&channel={CHANNEL}")
        async with client.http.get(client.url(f"/api/search?q=lake+secretword&guild={GUILD}")) as response:
            assert response.status == 200
    above_debug = " ".join(r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG)
    assert "search in guild 456" in above_debug and "browsed channel 10 of guild 456" in above_debug
    assert "secretword" not in above_debug and "printer" not in above_debug and "<script>" not in above_debug
    assert "secretword" in " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


async def test_an_unexpected_failure_is_logged_and_answered_in_one_line(client: SignedIn, fake_source: FakeSource,
                                                                       caplog: pytest.LogCaptureFixture,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(fake_source, "process_info", broken)
    async with client.http.get(client.url("/api/overview")) as response:
        assert response.status == 500
        assert await response.json() == {"error": "Something went wrong; the bot's log has the details."}
        assert response.headers["X-Frame-Options"] == "DENY"
    assert "GET /api/overview failed" in caplog.text and "disk on fire" in caplog.text


async def test_the_navigation_lists_every_page_views_registers(client: SignedIn) -> None:
    from cogs.memory.dashboard.views import PAGES

    html = await page(client, "/search")
    nav = html.split("<nav>")[1].split("</nav>")[0]
    assert re.findall(r'<a href="([^"]+)"', nav) == [path for path, _, _ in PAGES]
    assert '<a href="/search" aria-current="page">Search</a>' in nav
    for path, _, _ in PAGES:
        await page(client, path)  # each is served
