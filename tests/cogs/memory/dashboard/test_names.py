"""Names and ids both, where an admin acts on the dashboard: ``@name`` and ``#channel`` taken where unambiguous (the
candidates listed where not), authors shown with their ids, and a forget's confirmation saying what goes."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from tests.fixtures.dashboard import CHANNEL, GUILD, FakeMessage, FakeSource, SignedIn, T0, csrf_from

HOSTILE_CHANNEL = "#<script>alert('channel')</script>"


async def ask_forget(client: SignedIn, kind: str, target: str) -> tuple[int, str]:
    async with client.http.get(client.url("/controls")) as response:
        csrf = csrf_from(await response.text())
    form = {"kind": kind, "guild": str(GUILD), "target": target, "csrf_token": csrf}
    async with client.http.post(client.url("/controls/forget"), data=form) as response:
        return response.status, await response.text()


async def test_a_member_named_with_an_at_is_forgotten_after_a_confirmation_that_says_what_goes(
        client: SignedIn, fake_source: FakeSource) -> None:
    status, confirm = await ask_forget(client, "member", "@Member1")
    assert status == 200, confirm
    assert "Forget every message of member 101 in guild 456?" in confirm
    assert re.search(r'id="preview-count">2<', confirm)
    assert 'id="preview-author">member1 <code>101</code>' in confirm
    assert "#&lt;script&gt;alert(&#39;channel&#39;)&lt;/script&gt; <code>10</code>" in confirm
    assert 'id="preview-text">the lake cabin is booked<' in confirm  # the newest of the two
    assert "Test &lt;b&gt;guild&lt;/b&gt; <code>456</code>" in confirm
    assert fake_source.calls == []


async def test_a_messages_preview_is_its_text_escaped(client: SignedIn) -> None:
    status, confirm = await ask_forget(client, "message", "1000")
    assert status == 200 and 'id="preview-text">&lt;script&gt;alert(1)&lt;/script&gt;<' in confirm
    assert "<script>alert(1)" not in confirm
    status, confirm = await ask_forget(client, "message", "999")
    assert status == 200 and "(memory holds none of it now)" in confirm


async def test_an_ambiguous_or_unknown_name_is_refused_with_the_candidates(client: SignedIn,
                                                                           fake_source: FakeSource) -> None:
    fake_source.messages.append(FakeMessage(2000, GUILD, CHANNEL, 555, "MEMBER1", "same name", T0))
    status, answer = await ask_forget(client, "member", "@member1")
    assert status == 400
    assert ("2 members are named &#39;member1&#39;: @member1 (id 101, 2 messages), @MEMBER1 (id 555, 1 messages). "
            "Give the id of the one you mean") in answer
    status, answer = await ask_forget(client, "member", "@nobody")
    assert status == 400 and "No member named &#39;nobody&#39; has messages in memory in this guild" in answer
    status, answer = await ask_forget(client, "channel", "@member0")
    assert status == 400 and "takes a channel (#name or an id)" in answer
    assert fake_source.calls == []


async def test_a_channel_named_with_a_hash_is_forgotten_by_its_id(client: SignedIn, fake_source: FakeSource) -> None:
    status, confirm = await ask_forget(client, "channel", HOSTILE_CHANNEL)
    assert status == 200 and "every message in channel 10 of guild 456" in confirm
    assert re.search(r'id="preview-count">6<', confirm)


async def test_search_filters_take_names_and_hits_show_the_authors_id(client: SignedIn,
                                                                      fake_source: FakeSource) -> None:
    query = urlencode({"q": "the", "guild": GUILD, "author": "@member1", "channel": HOSTILE_CHANNEL})
    async with client.http.get(client.url(f"/search?{query}")) as response:
        html = await response.text()
    assert response.status == 200, html
    assert (fake_source.requests[-1].author_id, fake_source.requests[-1].channel_id) == (101, CHANNEL)
    assert '<span class="author">member1 <code>101</code></span>' in html
    data = await client.get_json(f"/api/search?{urlencode({'q': 'the', 'guild': GUILD, 'author': '102'})}")
    assert {hit["author_id"] for hit in data["hits"]} == {102} and fake_source.requests[-1].channel_id is None
    async with client.http.get(client.url(f"/api/search?{urlencode({'q': 'the', 'guild': GUILD, 'channel': '#x'})}")
                               ) as response:
        assert response.status == 400 and "No channel named 'x' is known" in (await response.json())["error"]


async def test_browse_shows_each_author_with_their_id(client: SignedIn) -> None:
    async with client.http.get(client.url(f"/browse?guild={GUILD}&channel={CHANNEL}")) as response:
        html = await response.text()
    assert '<td class="author">member2<br><code>102</code></td>' in html


async def test_the_api_forget_takes_a_name_and_answers_what_goes(client: SignedIn) -> None:
    asked = await client.post_json("/api/forget", {"kind": "member", "guild_id": GUILD, "target_id": "@member2"})
    assert asked["will_forget"] == "every message of member 102 in guild 456"
    assert asked["preview"]["count"] == 2 and asked["preview"]["author_name"] == "member2"
    assert asked["preview"]["text"] == "the printer is broken"


async def test_a_member_mention_is_their_id_and_another_guilds_member_is_not_found(
        client: SignedIn, fake_source: FakeSource) -> None:
    status, confirm = await ask_forget(client, "member", "<@102>")
    assert status == 200 and "Forget every message of member 102 in guild 456?" in confirm
    fake_source.messages.append(FakeMessage(3000, GUILD + 1, 77, 777, "elsewhere", "another guild", T0))
    status, answer = await ask_forget(client, "member", "@elsewhere")
    assert status == 400 and "No member named &#39;elsewhere&#39; has messages in memory in this guild" in answer
    assert fake_source.calls == []
